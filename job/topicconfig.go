package job

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// TopicConfig is a topic's settings, or a layer of them (conf.ini's defaults
// block, a topic's own section, a change made at run time), by conf.ini key:
// a key a layer leaves out is inherited from the layer below (kestrel's
// inheritance). Values are kept in their canonical text (CheckTopicSetting).
type TopicConfig map[string]string

// The topic settings gmq knows, each with its rule. Their meaning:
//   - max_items: the most jobs the topic holds, in any state (0: no limit);
//   - max_size: the most bytes of bodies the topic holds, in any state (0: no limit);
//   - max_item_size: the largest body a push may carry, bytes (0: [jobs] max_body);
//   - discard_old_when_full: a push to a full topic drops the topic's next
//     ready jobs (its head) to make room, instead of being refused;
//   - max_age: seconds; a job expires at most this long after its push (0: only
//     when the producer says);
//   - expire_to: a topic expired jobs are pushed to, afresh, instead of removed;
//   - max_expire_sweep: the most jobs the bucket timer expires in the topic per
//     round, a round a second while more are due (0: a tick batch);
//   - fanout_only: a push keeps no copy in the topic, only in its fanout
//     children (parent+child);
//   - max_queue_age: seconds; an empty topic older than this is forgotten (0: never);
//   - max_attempts: deliveries a job may fail (a fail, or its TTR running out)
//     before it goes to the dead set (0: retried for ever);
//   - backoff (fixed, linear, exponential), backoff_base and backoff_max
//     (seconds), backoff_jitter: the wait before a failed job's next attempt;
//   - dead_retention: seconds a dead job is kept (0: for ever);
//   - max_dead: the most dead jobs the topic keeps, the oldest dropped (0: no cap);
//   - max_fanout: the most fanout children (parent+child) the topic has, 64
//     when unset (0: no limit), so that one push's copies stay bounded;
//   - fanout_on_read: a read (a pop, a peek, kestrel's get) of parent+child
//     may make a new child (true, the default, as kestrel does), or only a
//     push or a settings change may (false);
//   - rate: deliveries a second, at most (a decimal; 0: no limit), with
//     burst: how many may go at once after a quiet spell (1 when unset): a
//     token bucket in Redis that every pop takes from (lua/lib_limits.lua);
//   - max_reserved: the most of the topic's jobs reserved at once, counted
//     across every broker and front end (0: no limit);
//   - unique_from: body makes every push that carries no unique key of its
//     own unique by a hash of its body (for beanstalkd and memcache puts,
//     which have no field for one); none (the default) does not;
//   - unique_for: that key's window, seconds (3600 when unset);
//   - unique_mode: what a push does while its key is held: reject (the
//     default), replace or debounce (Unique);
//   - group_from: a field of a JSON body whose value is the job's group when
//     the push names none (for beanstalkd and memcache puts);
//   - group_max_reserved: the most jobs of one group reserved at once (0: no
//     limit; 1: a group's jobs run one at a time, in order);
//   - group_rate: deliveries a second of one group, at most (0: no limit),
//     evenly spaced;
//   - keep_completed: seconds an acked job is kept, completed, with its ack's
//     result (0: an ack deletes it, the default); a push's own keep_completed
//     overrides it for that job;
//   - keep_results: seconds a job whose ack gave a result is kept, completed,
//     with it, where keep_completed (the job's own, or the topic's above 0)
//     does not say (DefaultKeepResults when unset; 0: such an ack deletes it
//     too). An ack without a result is not kept by it;
//   - max_completed: the most completed jobs the topic keeps, those due to
//     go first dropped (DefaultMaxCompleted when unset; 0: no cap);
//   - max_result: the largest result an ack may give, bytes
//     (DefaultMaxResult when unset; at most MaxResultLimit);
//   - events: the topic's jobs' transitions go to its bucket's events
//     stream, for GET /api/v1/events (docs/outcomes.md); false, the
//     default, writes none;
//   - job_history: the most entries of a job's history (its transitions,
//     each with its time and attempt) kept with it, the oldest dropped (0,
//     the default: none kept);
//   - max_log: the most lines a job's log keeps, the oldest dropped (100
//     when unset; 0: none kept);
//   - group_max_parked: the most groups with no ready job that group_rate
//     holds until their next token (100000 when unset; 0: no limit): each
//     is a producer's to make, so past it the one whose token comes first
//     is forgotten;
//   - deliver_to, deliver_timeout, deliver_secret: HTTP push delivery
//     (webhook.go).
var topicSettings = map[string]func(string) (string, error){
	"max_items":             wholeNumber,
	"max_size":              wholeNumber,
	"max_item_size":         wholeNumber,
	"discard_old_when_full": boolean,
	"max_age":               seconds,
	"expire_to":             topicName,
	"max_expire_sweep":      wholeNumber,
	"fanout_only":           boolean,
	"max_queue_age":         seconds,
	"max_attempts":          wholeNumber,
	"backoff":               backoff,
	"backoff_base":          seconds,
	"backoff_max":           seconds,
	"backoff_jitter":        boolean,
	"dead_retention":        seconds,
	"max_dead":              wholeNumber,
	"max_fanout":            wholeNumber,
	"fanout_on_read":        boolean,
	"rate":                  rate,
	"burst":                 burst,
	"max_reserved":          wholeNumber,
	"unique_from":           oneOf("body", "none"),
	"unique_for":            uniqueFor,
	"unique_mode":           oneOf(string(UniqueReject), string(UniqueReplace), string(UniqueDebounce)),
	"group_from":            fieldName,
	"group_max_reserved":    wholeNumber,
	"group_rate":            rate,
	"group_max_parked":      wholeNumber,
	"keep_completed":        seconds,
	"keep_results":          seconds,
	"max_completed":         wholeNumber,
	"max_result":            maxResult,
	"max_log":               upTo(MaxKept),
	"job_history":           upTo(MaxKept),
	"events":                boolean,
	DeliverTo:               deliverTo,
	DeliverTimeout:          deliverTimeout,
	DeliverSecret:           deliverSecret,
}

// Completed jobs' defaults and bounds (lua/lib_outcomes.lua reads the same
// defaults: TestOutcomeDefaultsAgree).
const (
	DefaultMaxCompleted = 10000
	DefaultMaxResult    = 16 << 10
	// DefaultKeepResults is keep_results when unset: a producer that is
	// given a result wants to read it (issue 49), for an hour.
	DefaultKeepResults = time.Hour
	// MaxResultLimit is the most max_result may be: an ack's request
	// carries its result whole.
	MaxResultLimit = 1 << 20
)

// MaxKept bounds max_log and job_history: a job's log and history are
// JSON in its record, read and written whole at each entry (a full 1,000
// costs a few ms of Redis's time an entry).
const MaxKept = 1000

// upTo is a whole number from 0 to most.
func upTo(most int64) func(string) (string, error) {
	return func(v string) (string, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > most {
			return "", fmt.Errorf("want a whole number from 0 to %d", most)
		}
		return strconv.FormatInt(n, 10), nil
	}
}

func maxResult(v string) (string, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || n > MaxResultLimit {
		return "", fmt.Errorf("want a whole number of bytes from 1 to %d", MaxResultLimit)
	}
	return strconv.FormatInt(n, 10), nil
}

// TopicSettingNames lists the settings gmq knows, sorted.
func TopicSettingNames() []string {
	names := make([]string, 0, len(topicSettings))
	for n := range topicSettings {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// CheckTopicSetting validates one setting and returns its canonical text.
// An empty value is "not set" (inherited from the layer below).
func CheckTopicSetting(key, value string) (string, error) {
	check, ok := topicSettings[key]
	if !ok {
		return "", fmt.Errorf("%w: unknown topic setting %q (gmq knows %v)", ErrInvalid, key, TopicSettingNames())
	}
	if value == "" {
		return "", nil
	}
	v, err := check(value)
	if err != nil && key == DeliverSecret { // never quoted: it may be a real secret, mistyped
		return "", fmt.Errorf("%w: topic setting %s: %v", ErrInvalid, key, err)
	}
	if err != nil {
		return "", fmt.Errorf("%w: topic setting %s = %q: %v", ErrInvalid, key, value, err)
	}
	return v, nil
}

// Over lays c over below: c's keys win, the others are below's.
func (c TopicConfig) Over(below TopicConfig) TopicConfig {
	out := make(TopicConfig, len(c)+len(below))
	for k, v := range below {
		out[k] = v
	}
	for k, v := range c {
		out[k] = v
	}
	return out
}

func wholeNumber(v string) (string, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return "", fmt.Errorf("want a whole number, 0 or more")
	}
	return strconv.FormatInt(n, 10), nil
}

// MaxSeconds bounds every duration a job or a setting gives in seconds: an
// unsigned 32-bit count, beanstalkd's bound on a delay or TTR, which a job's
// own delay, TTR and retry policy already had (136 years). Larger ones
// overflowed the scripts' milliseconds, and a job then showed no due time.
const MaxSeconds = math.MaxUint32

// seconds is a setting in whole seconds, 0 to MaxSeconds.
func seconds(v string) (string, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > MaxSeconds {
		return "", fmt.Errorf("want a whole number of seconds from 0 to %d", int64(MaxSeconds))
	}
	return strconv.FormatInt(n, 10), nil
}

// MaxRate bounds a topic's rate: a million deliveries a second is beyond
// what one Redis serves, and keeps the scripts' token arithmetic exact.
// MinRate is the slowest but none: one delivery in about 11.6 days (a
// smaller number, 1e-400, would read as 0, which is no limit at all).
const (
	MaxRate = 1e6
	MinRate = 1e-6
)

// rate is deliveries a second, 0 (no limit) or a decimal from MinRate to
// MaxRate, kept in Go's shortest form ("0.5", "100").
func rate(v string) (string, error) {
	f, err := strconv.ParseFloat(v, 64)
	mantissa, _, _ := strings.Cut(strings.ToLower(v), "e")
	if err != nil || math.IsNaN(f) || f > MaxRate || f < 0 || (f < MinRate && strings.ContainsAny(mantissa, "123456789")) {
		return "", fmt.Errorf("want deliveries a second: 0 (no limit) or a number from %g to %d", MinRate, int64(MaxRate))
	}
	return strconv.FormatFloat(f, 'f', -1, 64), nil
}

// MaxBurst bounds a topic's burst: tokens stay exact in the scripts' numbers.
const MaxBurst = 1_000_000_000

// burst is a whole number of tokens, 0 to MaxBurst (0 is taken as 1).
func burst(v string) (string, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > MaxBurst {
		return "", fmt.Errorf("want a whole number from 0 to %d", MaxBurst)
	}
	return strconv.FormatInt(n, 10), nil
}

// DefaultUniqueFor is unique_for when unset: an hour.
const DefaultUniqueFor = time.Hour

// uniqueFor is a unique key's window: whole seconds, 1 to MaxUniqueFor.
func uniqueFor(v string) (string, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || n > int64(MaxUniqueFor/time.Second) {
		return "", fmt.Errorf("want a whole number of seconds from 1 to %d", int64(MaxUniqueFor/time.Second))
	}
	return strconv.FormatInt(n, 10), nil
}

// fieldName is a JSON object's field name: 1 to 64 bytes, printable ASCII.
func fieldName(v string) (string, error) {
	if len(v) > 64 {
		return "", fmt.Errorf("want a field name of 1 to 64 printable ASCII characters")
	}
	for i := 0; i < len(v); i++ {
		if v[i] <= 0x20 || v[i] >= 0x7f {
			return "", fmt.Errorf("want a field name of 1 to 64 printable ASCII characters")
		}
	}
	return v, nil
}

// oneOf is a setting that takes one of words.
func oneOf(words ...string) func(string) (string, error) {
	return func(v string) (string, error) {
		for _, w := range words {
			if v == w {
				return v, nil
			}
		}
		return "", fmt.Errorf("want one of %s", strings.Join(words, ", "))
	}
}

func topicName(v string) (string, error) {
	if err := ValidateTopic(v); err != nil {
		return "", err
	}
	return v, nil
}

func boolean(v string) (string, error) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return "", fmt.Errorf("want true or false")
	}
	return strconv.FormatBool(b), nil
}
