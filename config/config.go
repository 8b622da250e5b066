// Package config owns gmq's options: their types, every default (in Default,
// and nowhere else), loading conf.ini and validating each value with a message
// that names its key.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gmq/gmq/internal/egress"
	"github.com/gmq/gmq/job"
	"gopkg.in/ini.v1"
)

// Config is the broker's whole configuration.
type Config struct {
	HTTP            string        // [server] http: the HTTP API's listen address
	LogLevel        slog.Level    // [server] log_level: debug, info, warn, error
	ShutdownTimeout time.Duration // [server] shutdown_timeout: how long in-flight requests may finish
	RequestTimeout  time.Duration // [server] request_timeout: longest a request may take (a long poll: plus its wait)
	MaxConnections  int           // [server] max_connections: open connections per listener (HTTP, beanstalkd, JSON-RPC, kestrel); 0: what the open-file limit fits (gmq start works it out)
	ReadTimeout     time.Duration // [server] read_timeout: longest a request may take to arrive (HTTP's whole; the TCP ports' once begun)
	IdleTimeout     time.Duration // [server] idle_timeout: longest an idle keep-alive HTTP connection is kept
	MaxRequestBody  int           // [server] max_request_body: bytes, the largest HTTP or JSON-RPC request of any kind
	BodyMemory      int           // [server] body_memory: bytes, all request bodies being read at once, every port together
	DefaultStatus   job.Status    // [server] default_status: this broker's own status at boot
	StatusGrace     time.Duration // [server] status_grace: how long a stricter status is announced before it is enforced

	RedisURL       string        // [redis] url
	Prefix         string        // [redis] prefix of every key
	Buckets        int           // [redis] buckets: fixed for the life of the data
	ConnectTimeout time.Duration // [redis] connect_timeout: how long start waits for Redis
	// TLS to Redis ([redis] tls_ca, tls_cert, tls_key, tls_server_name): a
	// CA to trust, a client certificate and key (for tls-auth-clients), the
	// name the server's certificate must carry. Any of them turns TLS on.
	RedisTLSCA, RedisTLSCert, RedisTLSKey, RedisTLSServerName string
	// WaitReplicas and WaitTimeout ([redis] wait_replicas, wait_timeout): a
	// push is answered only once this many replicas hold it (Redis's WAIT),
	// or refused with a 503 when they do not confirm it in time. 0: pushes
	// are answered once the master has them (replication is asynchronous).
	WaitReplicas int
	WaitTimeout  time.Duration
	// TLSCert and TLSKey ([server] tls_cert, tls_key): HTTPS for the HTTP
	// API and the dashboard.
	TLSCert, TLSKey string

	MaxBody         int           // [jobs] max_body: bytes
	DefaultTTR      time.Duration // [jobs] default_ttr
	DefaultPriority uint32        // [jobs] default_priority
	MaxPopTimeout   time.Duration // [jobs] max_pop_timeout: longest long poll
	MaxBatch        int           // [jobs] max_batch: jobs per batch push
	MaxWaiting      int           // [jobs] max_waiting: consumers waiting in a long poll at once
	MaxSchedules    int           // [jobs] max_schedules: cron schedules on the Redis, at most (a PUT of one more: 507)
	BatchRetention  time.Duration // [jobs] batch_retention: how long a finished batch is kept

	TickBatch      int           // [bucket] batch: due jobs one script moves
	BucketMaxSleep time.Duration // [bucket] max_sleep

	BeanstalkAddr string // [beanstalk] addr: beanstalkd protocol listen address ("" turns it off)
	MaxJobSize    int    // [beanstalk] max_job_size: bytes, beanstalkd's -z

	Token     string // [web] token: required by the dashboard and the HTTP API when set
	TokenFile string // [web] token_file: a file holding the token, so it need not sit in conf.ini

	// MetricsMaxTopics ([metrics] max_topics) is how many topics get series
	// of their own (the rest: topic="_other") and lines of their own in
	// kestrel's stats; each costs a read of Redis per scrape, so the default
	// keeps a scrape under 50 ms however many topics exist (at 1,000 it
	// took 60-150 ms on 2 cores: docs/PERFORMANCE.md); MetricsCache ([metrics]
	// cache) how long one read of Redis serves scrapes.
	MetricsMaxTopics int
	MetricsCache     time.Duration
	// MetricsAddr ([metrics] addr), when set, serves /metrics on a listener
	// of its own, without the token ("": on the HTTP port, behind it).
	MetricsAddr  string
	AllowedHosts []string // [web] allowed_hosts: Host names accepted besides loopback ones when http is on loopback
	// AllowOpenPorts ([server] allow_open_ports) lets the broker start with a
	// token and a port with no authentication (beanstalkd's, JSON-RPC's,
	// kestrel's memcache, text or thrift) beyond loopback: the token would
	// not guard it.
	AllowOpenPorts bool

	RPCAddr    string        // [rpc] addr: gmq JSON-RPC listen address ("" turns it off)
	RPCPopWait time.Duration // [rpc] pop_wait: how long Service.Pop waits before "empty"

	KestrelAddr       string // [kestrel] addr: kestrel's memcache protocol listen address ("" turns it off)
	KestrelTextAddr   string // [kestrel] text_addr: kestrel's text protocol listen address ("": off, the default)
	KestrelThriftAddr string // [kestrel] thrift_addr: kestrel's thrift protocol listen address ("": off, the default)

	// ZooKeeper server sets ([zookeeper]; off while hosts is empty): the
	// broker joins PathPrefix/write and /read as its status allows.
	ZooKeeperHosts          []string      // [zookeeper] hosts: the ensemble, host:port, comma-separated
	ZooKeeperPathPrefix     string        // [zookeeper] path_prefix
	ZooKeeperAdvertiseHost  string        // [zookeeper] advertise_host: the host clients reach this broker at ("": this machine's name)
	ZooKeeperSessionTimeout time.Duration // [zookeeper] session_timeout: how long after a broker dies its members go
	KestrelMaxOpenReads     int           // [kestrel] max_open_reads: reads a connection may hold open per queue

	// HTTP push delivery, package webhook ([webhook], once [delivery]; off
	// while allow_hosts is empty): the hosts a topic's deliver_to may name
	// (egress.Parse), and this broker's bounds on its webhook requests.
	WebhookAllowHosts  []string      // [webhook] allow_hosts: host names, *.suffixes, addresses, networks
	WebhookMaxInFlight int           // [webhook] max_in_flight: requests a topic has open at once on this broker
	WebhookMaxAnswer   int           // [webhook] max_answer: bytes of an endpoint's answer read (the rest is not)
	WebhookScan        time.Duration // [webhook] scan: how often the broker looks for topics that push
	// OldSections are the sections the file gave an old name, each as
	// "[delivery] is now [webhook]": gmq start warns of them.
	OldSections []string
	// KestrelAllowShutdown ([kestrel] allow_shutdown) lets kestrel's shutdown
	// command stop the broker: anyone who reaches the port could.
	KestrelAllowShutdown bool

	// TopicDefaults ([topics]) are every topic's settings, and Topics
	// ([topic.NAME]) each named topic's own, over the defaults; a NAME with
	// '*' is a pattern, whose settings lie between the two for every topic
	// it matches (job.PatternsFor) (see
	// job.TopicConfig for the keys).
	TopicDefaults job.TopicConfig
	Topics        map[string]job.TopicConfig
	// Aliases ([alias.NAME] destinations = a, b) are names that only take
	// pushes: a push to one pushes to each destination topic; a pop from
	// one finds it empty (kestrel's queue aliases).
	Aliases map[string][]string
	// Schedules ([schedule.NAME]) are cron schedules, each key as written
	// (ScheduleKeys); the dispatcher reads them as a schedule's definition.
	Schedules map[string]map[string]string

	// Not in conf.ini: internals with one sensible value (measured, see
	// docs/PERFORMANCE.md and docs/ARCHITECTURE.md), here so that every
	// default has one home.
	MaxOpsPerCall  int           // most pushes, pops and acks of one bucket in one script call (1: no batching)
	BatchSlots     int           // such script calls one bucket has in flight at once
	TopicCache     int           // job numbers whose topic a broker remembers
	AliasGrace     time.Duration // how long a client id's claim may wait for its job before a new push takes the id over
	TopicsPerRound int           // due topics a bucket timer takes per look at its schedule
	WaitingTTL     time.Duration // life of a broker's mark that consumers wait on a topic (refreshed every third of it)
	StatusPoll     time.Duration // how often a broker reads the shared server status
	// HistoryEvery is how often the server's counters are sampled into
	// Redis for the dashboard's chart (by whichever broker is first), and
	// HistoryKeep how many samples are kept: an hour's.
	HistoryEvery time.Duration
	HistoryKeep  int
	// HistoryTopics is how many topics, the first of the listing (the
	// dashboard's first page of 100), the broker that wrote a sample also
	// samples into each one's own history, the last 5 minutes, for their
	// sparklines: their cost does not grow with the number of topics.
	HistoryTopics int
}

// Default returns the configuration used for every key conf.ini leaves out.
func Default() Config {
	return Config{
		HTTP:                    "127.0.0.1:8000",
		LogLevel:                slog.LevelInfo,
		ShutdownTimeout:         10 * time.Second,
		RequestTimeout:          5 * time.Second,
		MaxConnections:          0,
		ReadTimeout:             30 * time.Second,
		IdleTimeout:             60 * time.Second,
		MaxRequestBody:          8 << 20,
		BodyMemory:              32 << 20,
		RedisURL:                "redis://127.0.0.1:6379/0",
		Prefix:                  "gmq",
		Buckets:                 16,
		ConnectTimeout:          10 * time.Second,
		WaitTimeout:             time.Second,
		MetricsMaxTopics:        250,
		MetricsCache:            5 * time.Second,
		MaxBody:                 64 << 10,
		DefaultTTR:              60 * time.Second,
		DefaultPriority:         1024,
		MaxPopTimeout:           60 * time.Second,
		MaxBatch:                1000,
		MaxWaiting:              20000,
		MaxSchedules:            1000,
		BatchRetention:          7 * 24 * time.Hour,
		TickBatch:               100,
		BucketMaxSleep:          time.Second,
		BeanstalkAddr:           "127.0.0.1:11300",
		MaxJobSize:              65535,
		RPCAddr:                 "127.0.0.1:9503",
		RPCPopWait:              time.Second,
		KestrelAddr:             "127.0.0.1:22133",
		KestrelMaxOpenReads:     1,
		ZooKeeperPathPrefix:     "/gmq/serverset",
		ZooKeeperSessionTimeout: 10 * time.Second,
		WebhookMaxInFlight:      16,
		WebhookMaxAnswer:        64 << 10,
		WebhookScan:             time.Second,
		MaxOpsPerCall:           64,
		BatchSlots:              2,
		TopicCache:              100_000,
		AliasGrace:              time.Second,
		TopicsPerRound:          64,
		WaitingTTL:              30 * time.Second,
		StatusPoll:              500 * time.Millisecond,
		HistoryEvery:            5 * time.Second,
		HistoryKeep:             720,
		HistoryTopics:           100,
	}
}

// setting binds one conf.ini key to a field.
type setting struct {
	section, key string
	parse        func(c *Config, v string) error
}

func (c *Config) settings() []setting {
	return []setting{
		{"server", "http", func(c *Config, v string) error { c.HTTP = v; return checkAddr(v) }},
		{"server", "log_level", func(c *Config, v string) error { return c.LogLevel.UnmarshalText([]byte(v)) }},
		{"server", "shutdown_timeout", durationTo(&c.ShutdownTimeout, time.Second, time.Hour)},
		{"server", "request_timeout", durationTo(&c.RequestTimeout, 10*time.Millisecond, time.Hour)},
		{"server", "max_connections", intTo(&c.MaxConnections, 0, 10_000_000)},
		{"server", "read_timeout", durationTo(&c.ReadTimeout, 100*time.Millisecond, time.Hour)},
		{"server", "idle_timeout", durationTo(&c.IdleTimeout, 100*time.Millisecond, time.Hour)},
		{"server", "max_request_body", intTo(&c.MaxRequestBody, 64<<10, 1<<30)},
		{"server", "body_memory", intTo(&c.BodyMemory, 1<<20, 1<<40)},
		{"server", "default_status", func(c *Config, v string) (err error) { c.DefaultStatus, err = job.ParseStatus(v); return err }},
		{"server", "status_grace", durationTo(&c.StatusGrace, 0, time.Hour)},
		{"redis", "url", func(c *Config, v string) error { c.RedisURL = v; return checkRedisURL(v) }},
		{"redis", "prefix", func(c *Config, v string) error { c.Prefix = v; return checkPrefix(v) }},
		{"redis", "buckets", intTo(&c.Buckets, 1, 1024)},
		{"redis", "connect_timeout", durationTo(&c.ConnectTimeout, 0, time.Hour)},
		{"redis", "tls_ca", stringTo(&c.RedisTLSCA)},
		{"server", "tls_cert", stringTo(&c.TLSCert)},
		{"server", "tls_key", stringTo(&c.TLSKey)},
		{"redis", "tls_cert", stringTo(&c.RedisTLSCert)},
		{"redis", "tls_key", stringTo(&c.RedisTLSKey)},
		{"redis", "tls_server_name", stringTo(&c.RedisTLSServerName)},
		{"redis", "wait_replicas", intTo(&c.WaitReplicas, 0, 64)},
		{"redis", "wait_timeout", durationTo(&c.WaitTimeout, time.Millisecond, time.Minute)},
		{"jobs", "max_body", intTo(&c.MaxBody, 1, 64<<20)},
		{"jobs", "default_ttr", durationTo(&c.DefaultTTR, 0, job.MaxSeconds*time.Second)},
		{"jobs", "default_priority", func(c *Config, v string) error {
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return errors.New("not a whole number from 0 to 4294967295")
			}
			c.DefaultPriority = uint32(n)
			return nil
		}},
		{"jobs", "max_pop_timeout", durationTo(&c.MaxPopTimeout, 0, time.Hour)},
		{"jobs", "max_batch", intTo(&c.MaxBatch, 1, 100_000)},
		{"jobs", "max_waiting", intTo(&c.MaxWaiting, 1, 10_000_000)},
		{"jobs", "max_schedules", intTo(&c.MaxSchedules, 1, 1_000_000)},
		{"jobs", "batch_retention", durationTo(&c.BatchRetention, time.Second, 10*365*24*time.Hour)},
		{"bucket", "batch", intTo(&c.TickBatch, 1, 100_000)},
		{"bucket", "max_sleep", durationTo(&c.BucketMaxSleep, time.Millisecond, time.Minute)},
		{"beanstalk", "addr", optionalAddrTo(&c.BeanstalkAddr)},
		{"beanstalk", "max_job_size", intTo(&c.MaxJobSize, 1, 64<<20)},
		{"web", "token", stringTo(&c.Token)},
		{"web", "token_file", stringTo(&c.TokenFile)},
		{"metrics", "max_topics", intTo(&c.MetricsMaxTopics, 0, 1_000_000)},
		{"metrics", "cache", durationTo(&c.MetricsCache, 0, time.Hour)},
		{"metrics", "addr", optionalAddrTo(&c.MetricsAddr)},
		{"web", "allowed_hosts", func(c *Config, v string) error {
			c.AllowedHosts = nil
			for _, h := range strings.Split(v, ",") {
				if h = strings.TrimSpace(h); h != "" {
					c.AllowedHosts = append(c.AllowedHosts, h)
				}
			}
			return nil
		}},
		{"server", "allow_open_ports", boolTo(&c.AllowOpenPorts)},
		{"zookeeper", "hosts", func(c *Config, v string) error {
			c.ZooKeeperHosts = nil
			for _, h := range strings.Split(v, ",") {
				if h = strings.TrimSpace(h); h != "" {
					if _, _, err := net.SplitHostPort(h); err != nil {
						return fmt.Errorf("%q is not host:port", h)
					}
					c.ZooKeeperHosts = append(c.ZooKeeperHosts, h)
				}
			}
			return nil
		}},
		{"zookeeper", "path_prefix", func(c *Config, v string) error {
			if !strings.HasPrefix(v, "/") || (len(v) > 1 && strings.HasSuffix(v, "/")) {
				return fmt.Errorf("%q: a ZooKeeper path starts with / and does not end with one", v)
			}
			c.ZooKeeperPathPrefix = v
			return nil
		}},
		{"zookeeper", "advertise_host", stringTo(&c.ZooKeeperAdvertiseHost)},
		{"zookeeper", "session_timeout", durationTo(&c.ZooKeeperSessionTimeout, time.Second, 10*time.Minute)},
		{"webhook", "allow_hosts", func(c *Config, v string) error {
			c.WebhookAllowHosts = nil
			for _, h := range strings.Split(v, ",") {
				if h = strings.TrimSpace(h); h != "" {
					c.WebhookAllowHosts = append(c.WebhookAllowHosts, h)
				}
			}
			_, err := egress.Parse(c.WebhookAllowHosts)
			return err
		}},
		{"webhook", "max_in_flight", intTo(&c.WebhookMaxInFlight, 1, 10_000)},
		{"webhook", "max_answer", intTo(&c.WebhookMaxAnswer, 0, job.MaxResultLimit)},
		{"webhook", "scan", durationTo(&c.WebhookScan, 10*time.Millisecond, time.Minute)},
		{"rpc", "addr", optionalAddrTo(&c.RPCAddr)},
		{"rpc", "pop_wait", durationTo(&c.RPCPopWait, 0, time.Minute)},
		{"kestrel", "max_open_reads", intTo(&c.KestrelMaxOpenReads, 1, 10_000)},
		{"kestrel", "allow_shutdown", boolTo(&c.KestrelAllowShutdown)},
		{"kestrel", "addr", optionalAddrTo(&c.KestrelAddr)},
		{"kestrel", "text_addr", optionalAddrTo(&c.KestrelTextAddr)},
		{"kestrel", "thrift_addr", optionalAddrTo(&c.KestrelThriftAddr)},
	}
}

// Load reads a conf.ini over the defaults. Unknown sections and keys are
// errors (a misspelt key would otherwise be silently ignored), and so is a
// section given twice.
func Load(path string) (Config, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	if err := checkSections(text); err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	f, err := ini.Load(text)
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	c := Default()
	if err := c.apply(f); err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	return c, c.validate()
}

// Parse reads conf.ini text over the defaults (for tests and fuzzing).
func Parse(text []byte) (Config, error) {
	if err := checkSections(text); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	f, err := ini.Load(text)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	c := Default()
	if err := c.apply(f); err != nil {
		return c, err
	}
	return c, c.validate()
}

// UnfittedMaxConnections is the cap of [server] max_connections = 0 where
// nothing fitted it to the open-file limit (gmq start does): a broker built
// in a test, or a limit that could not be read.
const UnfittedMaxConnections = 20000

// shown is a setting's value as an error may quote it: never a secret (the
// Redis URL may hold a password, the token is one).
func shown(s setting, v string) string {
	if s.key == "url" || s.key == "token" {
		return "(not shown)"
	}
	return strconv.Quote(v)
}

// ResolveToken reads the token from [web] token_file, if set (one line;
// surrounding space trimmed); setting both token and token_file is an error.
func (c *Config) ResolveToken() error {
	if c.TokenFile == "" {
		return nil
	}
	if c.Token != "" {
		return errors.New("[web] token and token_file are both set: keep one")
	}
	data, err := os.ReadFile(c.TokenFile)
	if err != nil {
		return fmt.Errorf("[web] token_file: %w", err)
	}
	if c.Token = strings.TrimSpace(string(data)); c.Token == "" {
		return fmt.Errorf("[web] token_file %s is empty", c.TokenFile)
	}
	return nil
}

// validate checks what no single key can: a job that beanstalkd's protocol
// accepts must fit the store's body limit, and a request any port accepts
// the body memory; an alias's destinations are topics.
func (c *Config) validate() error {
	if c.BeanstalkAddr != "" && c.MaxJobSize > c.MaxBody {
		return fmt.Errorf("[beanstalk] max_job_size = %d is over [jobs] max_body = %d", c.MaxJobSize, c.MaxBody)
	}
	if c.BeanstalkAddr != "" && c.MaxJobSize+2 > c.BodyMemory { // the body and its CRLF
		return fmt.Errorf("[beanstalk] max_job_size = %d is over [server] body_memory = %d (less 2): such a put could never be read", c.MaxJobSize, c.BodyMemory)
	}
	if c.MaxRequestBody > c.BodyMemory {
		return fmt.Errorf("[server] max_request_body = %d is over [server] body_memory = %d: such a request could never be read", c.MaxRequestBody, c.BodyMemory)
	}
	if err := c.ResolveToken(); err != nil {
		return err
	}
	if err := c.checkWebhooks(); err != nil {
		return err
	}
	return c.checkAliases()
}

func (c *Config) apply(f *ini.File) error {
	known := map[string]setting{}
	for _, s := range c.settings() {
		known[s.section+"."+s.key] = s
	}
	for _, sec := range f.Sections() {
		if err := c.applyTopic(sec); err != errNotTopic {
			if err != nil {
				return err
			}
			continue
		}
		name := sec.Name()
		if now := renamed[name]; now != "" {
			c.OldSections = append(c.OldSections, "["+name+"] is now ["+now+"]")
		}
		for _, k := range sec.Keys() {
			s, ok := known[canonical(name)+"."+k.Name()]
			if !ok {
				return fmt.Errorf("[%s] %s: unknown key", name, k.Name())
			}
			if err := s.parse(c, strings.TrimSpace(k.Value())); err != nil {
				return fmt.Errorf("[%s] %s = %s: %w", name, s.key, shown(s, k.Value()), err)
			}
		}
	}
	return nil
}

// Set applies one "section.key" value, as command-line flags do.
func (c *Config) Set(name, value string) error {
	for _, s := range c.settings() {
		if s.section+"."+s.key == name {
			if err := s.parse(c, value); err != nil {
				return fmt.Errorf("[%s] %s = %s: %w", s.section, s.key, shown(s, value), err)
			}
			return nil
		}
	}
	return fmt.Errorf("%s: unknown setting", name)
}
