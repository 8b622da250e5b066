package pool

import (
	"hash/crc32"
	"strconv"
	"strings"

	"github.com/gmq/gmq/lua"
)

// keys builds every Redis key gmq uses; no other code names a key. All keys of
// a bucket share the hash tag {bN}, so each script touches one hash slot and
// the same scripts run on one Redis or on a Redis Cluster.
type keys struct {
	prefix  string
	buckets []bucketKeys
}

// bucketKeys are one bucket's own keys, by name, and in the order the
// scripts take them (lua.BucketKeys, by name). defaults is
// the bucket's copy of every topic's default settings (a script reads only
// its slot); outbox holds expired jobs on their way to another topic
// (expire_to); fanout lists each parent topic's children; topicIndex holds
// the names of topics, as the topics set does, in a sorted set read a page
// at a time (topicindex.go).
type bucketKeys struct {
	jobs, bodies, due, stats, topics, defaults, outbox, fanout, topicIndex, events string
	followups, followupSpecs                                                       string
	scriptOrder                                                                    []string
}

// bucketKeyCount is how many keys of its own a bucket passes to every
// topic-scoped script, before each topic's topicKeyCount: lua/contract.go's
// BucketKeys and TopicKeys, which name the scripts' KEYS (contract.lua).
var (
	bucketKeyCount = len(lua.BucketKeys)
	topicKeyCount  = len(lua.TopicKeys)
)

func newKeys(prefix string, n int) keys {
	k := keys{prefix: prefix, buckets: make([]bucketKeys, n)}
	for b := range n {
		tag := k.tag(b)
		bk := bucketKeys{jobs: tag + ":jobs", bodies: tag + ":bodies", due: tag + ":due", stats: tag + ":stats",
			topics: tag + ":topics", defaults: tag + ":topic_defaults", outbox: tag + ":outbox", fanout: tag + ":fanout",
			topicIndex: tag + ":topic_index", events: tag + ":events", followups: tag + ":followups", followupSpecs: tag + ":followup_specs"}
		byName := map[string]string{"jobs": bk.jobs, "bodies": bk.bodies, "due": bk.due, "stats": bk.stats,
			"topics": bk.topics, "defaults": bk.defaults, "outbox": bk.outbox, "fanout": bk.fanout,
			"topic_index": bk.topicIndex, "events": bk.events, "followups": bk.followups, "followup_specs": bk.followupSpecs}
		for _, slot := range lua.BucketKeys {
			key, ok := byName[slot.Name]
			if !ok {
				panic("pool: no key for the scripts' bucket key " + slot.Name) // TestKeysFollowTheContract
			}
			bk.scriptOrder = append(bk.scriptOrder, key)
		}
		k.buckets[b] = bk
	}
	return k
}

// topicSlot is how one of a topic's script keys is built: its bucket's tag,
// then ":<kind>:<topic>", unless it is the topic's settings hash (config) or
// its parent's (parentConfig), which the caller names.
type topicSlot struct {
	kind                 string
	config, parentConfig bool
}

// topicSlots are lua.TopicKeys in their order, as topicSlot.
var topicSlots = func() []topicSlot {
	byName := map[string]topicSlot{"ready": {kind: "ready"}, "delayed": {kind: "delayed"}, "reserved": {kind: "reserved"},
		"buried": {kind: "buried"}, "info": {kind: "topic"}, "waiting": {kind: "waiting"}, "config": {config: true},
		"expires": {kind: "expires"}, "parent_config": {parentConfig: true}, "dead": {kind: "dead"},
		"group_ring": {kind: "group_ring"}, "group_jobs": {kind: "group_jobs"}, "group_ready": {kind: "group_ready"},
		"group_state": {kind: "group_state"}, "completed": {kind: "completed"}, "cancelled": {kind: "cancelled"}, "after": {kind: "after"}}
	out := make([]topicSlot, len(lua.TopicKeys))
	for i, slot := range lua.TopicKeys {
		s, ok := byName[slot.Name]
		if !ok {
			panic("pool: no key for the scripts' topic key " + slot.Name) // TestKeysFollowTheContract
		}
		out[i] = s
	}
	return out
}()

func (k keys) tag(b int) string { return k.prefix + ":{b" + strconv.Itoa(b) + "}" }

// bucketOf maps a topic to its bucket: a fanout child (parent+child) lives
// in its parent's, so that a push to the parent reaches its children in one
// script (one hash slot).
func (k keys) bucketOf(topic string) int { return k.hash(Parent(topic)) }

// aliasBucket maps a client-supplied job id to the bucket of its alias.
func (k keys) aliasBucket(clientID string) int { return k.hash(clientID) }

func (k keys) hash(name string) int {
	return int(crc32.ChecksumIEEE([]byte(name)) % uint32(len(k.buckets)))
}

// Parent is the topic a fanout child (parent+child: a name with a '+')
// belongs to, or the topic itself.
func Parent(topic string) string {
	if i := strings.IndexByte(topic, '+'); i > 0 {
		return topic[:i]
	}
	return topic
}

// bucket returns bucket b's own keys in the scripts' KEYS order.
func (k keys) bucket(b int) []string { return k.buckets[b].scriptOrder }

// events is bucket b's stream of its topics' events (lib_events.lua emit).
func (k keys) events(b int) string { return k.buckets[b].events }

// due is bucket b's sorted set of topics by earliest due time.
func (k keys) due(b int) string { return k.buckets[b].due }

// stats is bucket b's hash of counts and totals.
func (k keys) stats(b int) string { return k.buckets[b].stats }

// topics is bucket b's set of topic names.
func (k keys) topics(b int) string { return k.buckets[b].topics }

// topicIndex is bucket b's sorted set of the same names, every score 0, so
// that it lists them in byte order (ZRANGE BYLEX).
func (k keys) topicIndex(b int) string { return k.buckets[b].topicIndex }

// withTopics returns the bucket's keys followed by each topic's keys, the
// KEYS layout of the scripts (lua/contract.go). A topic belongs to bucket b,
// or is a guess: a job's topic not yet known (""), or known wrongly, which
// the script answers with the right one. Every key is in b's slot either
// way, so that the guess cannot make a Cluster refuse the call (its keys in
// several slots) before the script can answer.
func (k keys) withTopics(b int, topics ...string) []string {
	out := make([]string, 0, bucketKeyCount+topicKeyCount*len(topics))
	out = append(out, k.buckets[b].scriptOrder...)
	for _, t := range topics {
		out = k.appendTopic(out, b, t, k.configIn(b, t), k.configIn(b, Parent(t)))
	}
	return out
}

// withTopicIn is withTopics for a topic found in bucket b whatever its
// placement says (data written before fanout placed a topic named a+b by
// its whole name): every key in b's slot, its settings read from there.
func (k keys) withTopicIn(b int, t string) []string {
	out := append(make([]string, 0, bucketKeyCount+topicKeyCount), k.buckets[b].scriptOrder...)
	return k.appendTopic(out, b, t, k.configIn(b, t), k.configIn(b, t))
}

// appendTopic appends topic t's keys in bucket b, in the scripts' order
// (topicSlots).
func (k keys) appendTopic(out []string, b int, t, config, parentConfig string) []string {
	tag := k.tag(b)
	for _, s := range topicSlots {
		switch {
		case s.config:
			out = append(out, config)
		case s.parentConfig:
			out = append(out, parentConfig)
		default:
			out = append(out, tag+":"+s.kind+":"+t)
		}
	}
	return out
}

// totalsSeq holds the number of the last totals write of broker origin
// that bucket b took (add_totals.lua, totals.go).
func (k keys) totalsSeq(b int, origin string) string { return k.tag(b) + ":totals_seq:" + origin }

// info is topic t's info hash in bucket b (its counters, pause): the
// scripts' "info" key.
func (k keys) info(b int, t string) string { return k.tag(b) + ":topic:" + t }

// waiting is the marker a broker sets while it has consumers waiting on a topic.
func (k keys) waiting(topic string) string {
	return k.tag(k.bucketOf(topic)) + ":waiting:" + topic
}

// config is a topic's settings: "file.<key>" from conf.ini, "run.<key>"
// changed at run time. It outlives the topic's jobs and counters.
func (k keys) config(topic string) string { return k.configIn(k.bucketOf(topic), topic) }

// configIn is a topic's settings hash as kept in bucket b.
func (k keys) configIn(b int, topic string) string { return k.tag(b) + ":config:" + topic }

// unique is the key of a unique push to topic (in the topic's slot): it
// holds the member of the job that took it, for the key's window. byBody:
// key is the hash of a body (unique_from = body), kept apart from the keys
// producers name.
func (k keys) unique(topic, key string, byBody bool) string {
	kind := ":unique:"
	if byBody {
		kind = ":unique-body:"
	}
	return k.tag(k.bucketOf(topic)) + kind + topic + ":" + key
}

// schedule is schedule name's hash, in its job topic's bucket (schedules.go).
func (k keys) schedule(topic, name string) string {
	return k.scheduleIn(k.bucketOf(topic), name)
}

// scheduleIn is schedule name's hash in bucket b (a sweep looks in each).
func (k keys) scheduleIn(b int, name string) string { return k.tag(b) + ":schedule:" + name }

// scheduleLock is held by the one broker writing schedule name (a PUT or a
// DELETE), so that writes of one name take turns.
func (k keys) scheduleLock(name string) string { return k.prefix + ":schedule_lock:" + name }

// schedules maps each schedule's name to its job's topic.
func (k keys) schedules() string { return k.prefix + ":schedules" }

// configured lists the topics that have a config hash (for reloads and listings).
func (k keys) configured() string { return k.prefix + ":configured" }

// batch is batch id's keys in bucket b, in batches.lua's order: its hash,
// members, ends, dead and results, then the bucket's batches, finished
// batches and unstored members.
func (k keys) batch(b int, id uint64) []string {
	tag, n := k.tag(b), strconv.FormatUint(id, 10)
	return []string{tag + ":batch:" + n, tag + ":batch_members:" + n, tag + ":batch_ends:" + n,
		tag + ":batch_dead:" + n, tag + ":batch_results:" + n,
		tag + ":batches", tag + ":batches_finished", tag + ":batch_unstored"}
}

// aliases maps client-supplied ids of one bucket to members.
func (k keys) aliases(b int) string { return k.tag(b) + ":aliases" }

// ids is the global counter that id blocks are taken from.
func (k keys) ids() string { return k.prefix + ":ids" }

// status holds the server status every broker obeys ("" or missing: up).
func (k keys) status() string { return k.prefix + ":status" }

// history is the list of samples of the server's counters (newest first),
// for the dashboard's chart.
func (k keys) history() string { return k.prefix + ":history" }

// topicHistory is a topic's own list of samples of its counters (newest
// first), for its sparkline on the dashboard: in its bucket's slot, so
// that one script writes a bucket's topics' lists. It expires by itself
// (see RecordTopicHistory), so no script that forgets a topic names it.
func (k keys) topicHistory(topic string) string {
	return k.tag(k.bucketOf(topic)) + ":history:" + topic
}

// meta holds deployment facts checked at start (the bucket count).
func (k keys) meta() string { return k.prefix + ":meta" }

// channel is the pub/sub channel on which brokers announce ready jobs
// (and ends, and follow-ups due). lua/lib.lua flush names it from a
// bucket's due key (PREFIX:{bN}:due), so the two shapes go together.
func (k keys) channel() string { return k.prefix + ":wake" }
