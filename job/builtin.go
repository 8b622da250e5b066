package job

import (
	"strconv"
	"time"
)

// BuiltIn is what each topic setting is when no layer sets it (neither
// [topics], a pattern, a parent, [topic.NAME] nor a change at run time):
// the value the scripts and the broker fall back to, so that a topic's
// config view can show every setting's effective value, not only those set
// (issue 49: "defaults": {} hid a retry policy of 25 attempts). "" is a
// setting that is off when unset (deliver_to, expire_to, group_from...).
// TestBuiltInCoversEverySetting keeps it whole, and lua's
// TestBuiltInAgreesWithTheScripts keeps it the scripts' own.
var BuiltIn = TopicConfig{
	"max_items":             "0",
	"max_size":              "0",
	"max_item_size":         "0", // [jobs] max_body
	"discard_old_when_full": "false",
	"max_age":               "0",
	"expire_to":             "",
	"max_expire_sweep":      "0",
	"fanout_only":           "false",
	"max_queue_age":         "0",
	"max_attempts":          strconv.Itoa(DefaultMaxAttempts),
	"backoff":               "exponential",
	"backoff_base":          "1",
	"backoff_max":           "3600",
	"backoff_jitter":        "false",
	"dead_retention":        "604800",
	"max_dead":              "0",
	"max_fanout":            "64",
	"fanout_on_read":        "true",
	"rate":                  "0",
	"burst":                 "1",
	"max_reserved":          "0",
	"unique_from":           "none",
	"unique_for":            wholeSeconds(DefaultUniqueFor),
	"unique_mode":           string(UniqueReject),
	"group_from":            "",
	"group_max_reserved":    "0",
	"group_rate":            "0",
	"group_max_parked":      "100000",
	"keep_completed":        "0",
	"keep_results":          wholeSeconds(DefaultKeepResults),
	"max_completed":         strconv.Itoa(DefaultMaxCompleted),
	"max_result":            strconv.Itoa(DefaultMaxResult),
	"max_log":               "100",
	"job_history":           "0",
	"events":                "false",
	DeliverTo:               "",
	DeliverTimeout:          wholeSeconds(DefaultDeliverTimeout),
	DeliverSecret:           "",
}

// wholeSeconds is d as a setting writes it, whole seconds.
func wholeSeconds(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) }

// Where a topic's effective setting comes from (TopicLayers.Sources).
const (
	FromBuiltIn  = "built_in" // no layer sets it: BuiltIn
	FromDefaults = "defaults" // [topics]
	FromPatterns = "patterns" // a [topic.PATTERN] that matches it
	FromParent   = "parent"   // a fanout child's parent's own
	FromFile     = "file"     // [topic.NAME]
	FromRun      = "run"      // changed at run time
)

// All is every setting's effective value: those set (Effective) over
// BuiltIn.
func (l TopicLayers) All() TopicConfig { return l.Effective.Over(BuiltIn) }

// Sources says, for every setting, which layer its effective value comes
// from: the topmost that sets it, else FromBuiltIn.
func (l TopicLayers) Sources() map[string]string {
	out := make(map[string]string, len(BuiltIn))
	for name := range BuiltIn {
		out[name] = FromBuiltIn
	}
	for _, layer := range []struct {
		from string
		c    TopicConfig
	}{{FromDefaults, l.Defaults}, {FromPatterns, l.Patterns}, {FromParent, l.Parent}, {FromFile, l.File}, {FromRun, l.Run}} {
		for name := range layer.c {
			if _, known := out[name]; known {
				out[name] = layer.from
			}
		}
	}
	return out
}
