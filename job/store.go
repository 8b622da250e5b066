package job

import "time"

// What the store tells of itself and of a topic's settings, which the
// front ends, the metrics and the dashboard read (through the dispatcher).

// NodeInfo is one Redis node as an operator sees it: a single Redis is one
// node; a cluster has each master and replica.
type NodeInfo struct {
	Addr       string
	Role       string // master or slave (Redis's words)
	UsedMemory int64
	RTT        time.Duration
	Slots      string // a cluster master's slot ranges ("0-5460"), "" otherwise
	Err        string // the node could not be read
}

// RedisInfo is what an operator wants to know of the Redis behind gmq.
type RedisInfo struct {
	UsedMemory int64         // bytes
	RTT        time.Duration // one PING's round trip
	Version    string
}

// Sample is the server's counters at one instant (Redis's clock), as the
// history keeps them: field name -> value ("pushed", "reserved", "ready"...).
type Sample struct {
	At     time.Time
	Values map[string]int64
}

// TopicLayers are a topic's settings, layer by layer, and the result.
type TopicLayers struct {
	Defaults, File, Run, Effective TopicConfig
	// Patterns are the settings of conf.ini's patterns that match the
	// topic ([topic.crawl/*]), the most specific on top.
	Patterns TopicConfig
	// Parent is a fanout child's parent's own settings (its file and run
	// layers), which the child inherits under its own; nil for other topics.
	Parent TopicConfig
}
