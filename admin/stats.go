package admin

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"
)

// stats shows GET /api/v1/stats for people: jobs by state, totals,
// consumers and connections, the server, and its Redis (version, memory,
// round trip: GET /api/v1/redis). With --json it prints /stats as the API
// answers it.
func stats(c *call) error {
	answer, err := c.do("GET", "/stats", nil)
	if err != nil {
		return err
	}
	if c.json {
		return c.show(answer, nil)
	}
	m, _ := answer.(map[string]any)
	// The Redis part is a second request: a broker that cannot answer it
	// still has its counts shown, with the reason in place of the Redis.
	redis, redisErr := c.do("GET", "/redis", nil)
	r, _ := redis.(map[string]any)
	return writeSections(c.out, statsView(m, r, redisErr))
}

// section is a titled group of label, value rows.
type section struct {
	title string
	rows  [][2]string
}

// statsReader takes a stats answer's keys into sections, remembering which
// it took, so that a key it does not know (a newer broker's) is shown
// under "other" rather than hidden.
type statsReader struct {
	m    map[string]any
	used map[string]bool
}

// add appends a row for key, shown by format (text when nil); a key the
// answer lacks (an older broker) gets no row.
func (r *statsReader) add(s *section, label, key string, format func(any) string) {
	v, ok := r.m[key]
	r.used[key] = true
	if !ok {
		return
	}
	if format == nil {
		format = text
	}
	s.rows = append(s.rows, [2]string{label, format(v)})
}

// statsView groups a /stats answer, and a /redis answer or why there is
// none, into sections.
func statsView(m, redis map[string]any, redisErr error) []section {
	r := &statsReader{m: m, used: map[string]bool{}}
	server := section{title: "server"}
	r.add(&server, "version", "version", nil)
	r.add(&server, "status", "status", nil)
	r.add(&server, "uptime", "uptime", humanDuration)
	r.add(&server, "pid", "pid", nil)
	r.add(&server, "topics", "topics", nil)
	r.add(&server, "buckets", "buckets", nil)
	r.add(&server, "store format", "store_format", func(v any) string {
		out := text(v)
		if done, ok := r.m["store_migrated"].(bool); ok && !done {
			out += fmt.Sprintf(" (migrating: %s bodies moved by this broker)", text(r.m["store_bodies_migrated"]))
		}
		return out
	})
	r.used["store_migrated"], r.used["store_bodies_migrated"] = true, true

	jobs := section{title: "jobs by state"}
	for _, state := range []string{"ready", "delayed", "reserved", "buried", "dead", "completed", "cancelled"} {
		r.add(&jobs, state, "current_jobs_"+state, nil)
	}
	r.add(&jobs, "follow-ups waiting", "current_followups", nil) // kept, not yet pushed (docs/workflows.md)

	totals := section{title: "totals"}
	for _, t := range [][2]string{
		{"pushed", "total_jobs"}, {"reserved", "total_reserves"}, {"deleted", "total_deletes"},
		{"released", "total_releases"}, {"buried", "total_buries"}, {"kicked", "total_kicks"},
		{"touched", "total_touches"}, {"timed out", "total_timeouts"}, {"failed", "total_failures"},
		{"died", "total_dead"}, {"completed", "total_completed"}, {"cancelled", "total_cancelled"}, {"flushed", "total_flushed"}, {"discarded", "total_discarded"},
		{"expired", "total_expired"}, {"topics created", "queue_creates"}, {"topics deleted", "queue_deletes"},
		{"topics expired", "queue_expires"},
	} {
		r.add(&totals, t[0], t[1], nil)
	}

	local := section{title: "consumers and connections (this broker)"}
	r.add(&local, "consumers in a long poll", "current_waiting", nil)
	r.add(&local, "requests waiting for a job's end", "current_end_waits", nil)
	if conns, ok := m["connections"].(map[string]any); ok {
		for _, name := range sortedKeys(conns) {
			local.rows = append(local.rows, [2]string{name + " connections", text(conns[name])})
		}
	}
	r.used["connections"] = true
	if ops, ok := m["batched_operations"].(float64); ok {
		calls, _ := m["batch_script_calls"].(float64)
		local.rows = append(local.rows, [2]string{"batched operations", batched(ops, calls)})
		r.used["batched_operations"], r.used["batch_script_calls"] = true, true
	}
	r.add(&local, "client ids left behind", "aliases_left", nil)
	r.add(&local, "expired jobs refused", "expired_refused", nil)
	r.add(&local, "Redis lost gmq's data", "store_data_lost", func(v any) string {
		times := map[any]string{0.0: "never", 1.0: "once"}[v]
		if times == "" {
			times = text(v) + " times"
		}
		if at, ok := m["store_data_lost_at"].(string); ok {
			times += ", last at " + at
		}
		return times
	})
	r.used["store_data_lost_at"] = true

	sections := []section{server, jobs, totals, local, redisSection(redis, redisErr)}
	other := section{title: "other"}
	for _, k := range sortedKeys(m) {
		if !r.used[k] {
			other.rows = append(other.rows, [2]string{k, text(m[k])})
		}
	}
	if len(other.rows) > 0 {
		sections = append(sections, other)
	}
	return sections
}

// redisSection shows a /redis answer: version, memory, round trip, and each
// node when there are several (a cluster).
func redisSection(m map[string]any, err error) section {
	s := section{title: "redis"}
	if err != nil {
		s.rows = append(s.rows, [2]string{"unavailable", err.Error()})
		return s
	}
	s.rows = append(s.rows, [2]string{"version", text(m["version"])},
		[2]string{"memory used", humanBytes(m["used_memory"])},
		[2]string{"round trip", milliseconds(m["rtt_ms"])})
	nodes, _ := m["nodes"].([]any)
	if len(nodes) < 2 {
		return s
	}
	for _, n := range nodes {
		n, _ := n.(map[string]any)
		v := text(n["role"]) + ", " + humanBytes(n["used_memory"])
		if rtt, ok := n["rtt_ms"]; ok {
			v += ", " + milliseconds(rtt)
		}
		if e, ok := n["error"]; ok {
			v += ", " + text(e)
		}
		s.rows = append(s.rows, [2]string{"node " + text(n["addr"]), v})
	}
	return s
}

// writeSections writes each section's title, then its rows indented, the
// values of every section in one column.
func writeSections(w io.Writer, sections []section) error {
	width := 0
	for _, s := range sections {
		for _, row := range s.rows {
			width = max(width, len(row[0]))
		}
	}
	var b strings.Builder
	for _, s := range sections {
		if len(s.rows) == 0 {
			continue
		}
		b.WriteString(s.title + "\n")
		for _, row := range s.rows {
			fmt.Fprintf(&b, "  %-*s  %s\n", width, row[0], row[1])
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// humanDuration shows a number of seconds as people say it: "42s",
// "12m5s", "3h12m", "4d3h".
func humanDuration(v any) string {
	secs, ok := v.(float64)
	if !ok || secs < 0 || secs > math.MaxInt64/1e9 {
		return text(v)
	}
	d := time.Duration(math.Round(secs)) * time.Second
	const day = 24 * time.Hour
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", d/time.Second)
	case d < time.Hour:
		return fmt.Sprintf("%dm%ds", d/time.Minute, d%time.Minute/time.Second)
	case d < day:
		return fmt.Sprintf("%dh%dm", d/time.Hour, d%time.Hour/time.Minute)
	}
	return fmt.Sprintf("%dd%dh", d/day, d%day/time.Hour)
}

// humanBytes shows a number of bytes in binary units: "512 B", "1.4 MiB".
func humanBytes(v any) string {
	n, ok := v.(float64)
	if !ok || n < 0 {
		return text(v)
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	i := 0
	for ; n >= 1024 && i < len(units)-1; i++ {
		n /= 1024
	}
	if i == 0 {
		return fmt.Sprintf("%d B", int64(n))
	}
	return fmt.Sprintf("%.1f %s", n, units[i])
}

// milliseconds shows a round trip given in milliseconds.
func milliseconds(v any) string {
	if ms, ok := v.(float64); ok {
		return fmt.Sprintf("%.2f ms", ms)
	}
	return text(v)
}

// batched shows how many operations this broker sent in how many script
// calls, and their average batch.
func batched(ops, calls float64) string {
	if calls == 0 {
		return fmt.Sprintf("%s in no script calls", text(ops))
	}
	return fmt.Sprintf("%s in %s script calls (%.1f a call)", text(ops), text(calls), ops/calls)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
