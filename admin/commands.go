package admin

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/url"
	"strconv"
)

// topicsPage is how many topics one request of `gmq topics` asks for.
const topicsPage = 1000

// topics lists every topic: name, counts per state, paused. The API answers
// a page at a time (?offset=&limit=), so it asks page after page until it
// has the total the first page announced, or a page comes back empty (the
// topics changed meanwhile); --json shows them as one answer.
func topics(c *call) error {
	var all []any
	total := 0.0
	for {
		answer, err := c.do("GET", fmt.Sprintf("/topics?offset=%d&limit=%d", len(all), topicsPage), nil)
		if err != nil {
			return err
		}
		m, _ := answer.(map[string]any)
		list, _ := m["topics"].([]any)
		if n, ok := m["total"].(float64); ok {
			total = n
		}
		all = append(all, list...)
		if len(list) == 0 || float64(len(all)) >= total {
			break
		}
	}
	answer := map[string]any{"total": total, "offset": 0, "topics": all}
	return c.show(answer, func(w io.Writer) {
		fmt.Fprintln(w, "TOPIC\tREADY\tDELAYED\tRESERVED\tBURIED\tDEAD\tPAUSED")
		for _, t := range all {
			t, _ := t.(map[string]any)
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", text(t["name"]), text(t["ready"]), text(t["delayed"]),
				text(t["reserved"]), text(t["buried"]), text(t["dead"]), text(t["paused"]))
		}
	})
}

// dead lists a topic's dead jobs (the oldest 100).
func dead(c *call) error {
	answer, err := c.do("GET", "/topics/"+c.path(0)+"/dead?limit=100", nil)
	if err != nil {
		return err
	}
	return c.show(answer, func(w io.Writer) {
		fmt.Fprintln(w, "ID\tFAILURES\tDIED\tLAST ERROR\tBODY")
		m, _ := answer.(map[string]any)
		list, _ := m["jobs"].([]any)
		for _, j := range list {
			j, _ := j.(map[string]any)
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", text(j["id"]), text(j["failures"]), text(j["dead_at"]),
				text(j["last_error"]), text(j["body_preview"]))
		}
		if total, _ := m["total"].(float64); int(total) > len(list) {
			fmt.Fprintf(w, "(the oldest %d of %d dead jobs)\n", len(list), int(total))
		}
	})
}

// completed lists a topic's completed jobs (the newest 100), with their results.
func completed(c *call) error {
	answer, err := c.do("GET", "/topics/"+c.path(0)+"/completed?limit=100", nil)
	if err != nil {
		return err
	}
	return c.show(answer, func(w io.Writer) {
		fmt.Fprintln(w, "ID\tATTEMPT\tCOMPLETED\tRESULT\tBODY")
		m, _ := answer.(map[string]any)
		list, _ := m["jobs"].([]any)
		for _, j := range list {
			j, _ := j.(map[string]any)
			result := ""
			if r, ok := j["result"]; ok {
				b, _ := json.Marshal(r)
				result = string(b)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", text(j["id"]), text(j["attempt"]), text(j["completed_at"]),
				result, text(j["body_preview"]))
		}
		if total, _ := m["total"].(float64); int(total) > len(list) {
			fmt.Fprintf(w, "(the newest %d of %d completed jobs)\n", len(list), int(total))
		}
	})
}

// peek shows a topic's next job in a state (ready by default).
func peek(c *call) error {
	state := "ready"
	if len(c.args) == 2 {
		state = c.args[1]
	}
	return c.showMap("GET", "/topics/"+c.path(0)+"/peek/"+url.PathEscape(state), nil)
}

// push stores a job and prints its id.
func push(c *call) error {
	body := map[string]any{"topic": c.args[0], "body": c.args[1], "delay": c.delay}
	c.put(body, "ttr", c.ttr)
	c.put(body, "priority", c.priority)
	if c.given["group"] {
		body["group"] = c.group
	}
	if c.given["unique"] || c.given["unique-for"] || c.given["unique-mode"] {
		if !c.given["unique"] || !c.given["unique-for"] {
			return usageError{"--unique KEY and --unique-for S go together"}
		}
		unique := map[string]any{"key": c.unique, "for": c.uniqueFor}
		if c.given["unique-mode"] {
			unique["mode"] = c.uniqueMode
		}
		body["unique"] = unique
	}
	answer, err := c.do("POST", "/jobs", body)
	if err != nil {
		return err
	}
	return c.show(answer, func(w io.Writer) {
		m, _ := answer.(map[string]any)
		if done, ok := m["unique"]; ok { // a waiting job with the key was changed
			fmt.Fprintf(w, "%s (%s)\n", text(m["id"]), text(done))
			return
		}
		fmt.Fprintln(w, text(m["id"]))
	})
}

// pop reserves a job (waiting up to --timeout) and shows it; with none,
// it says so (null with --json) and succeeds: an empty topic is no failure.
// With --ack it acks the job too, fenced by its attempt, and shows it with
// the ack's answer in place of its state: a job popped to be looked at and
// left reserved times out and counts as a failure.
func pop(c *call) error {
	q := url.Values{"topic": {c.args[0]}, "timeout": {strconv.FormatFloat(c.timeout, 'f', -1, 64)}}
	answer, err := c.do("GET", "/pop?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	if job, ok := answer.(map[string]any); ok && c.ackPopped {
		acked, err := c.do("POST", "/jobs/"+url.PathEscape(text(job["id"]))+"/ack", map[string]any{"attempt": job["attempt"]})
		if err != nil {
			return fmt.Errorf("popped job %s, but its ack failed (it stays reserved until its TTR): %w", text(job["id"]), err)
		}
		// What held its reservation (its deadline, time left, token) no
		// longer says anything of a job acked.
		for _, held := range []string{"state", "due", "time_left", "token"} {
			delete(job, held)
		}
		if m, ok := acked.(map[string]any); ok {
			maps.Copy(job, m)
		}
	}
	return c.show(answer, func(w io.Writer) {
		if answer == nil {
			fmt.Fprintln(w, "(no job)")
			return
		}
		writeMap(w, answer)
	})
}

// ack finishes a reserved job (deletes it), fenced by --attempt.
func ack(c *call) error {
	body := map[string]any{}
	c.put(body, "attempt", c.attempt)
	if c.given["result"] {
		if !json.Valid([]byte(c.result)) {
			return usageError{fmt.Sprintf("--result %q: want a JSON value (a string is quoted: '\"done\"')", c.result)}
		}
		body["result"] = json.RawMessage(c.result)
	}
	return c.showMap("POST", "/jobs/"+c.path(0)+"/ack", body)
}

// release gives a reserved job back, ready now or after --delay, with a
// new --priority or its own, and shows the job.
func release(c *call) error {
	body := map[string]any{}
	c.put(body, "attempt", c.attempt)
	c.put(body, "delay", c.delay)
	c.put(body, "priority", c.priority)
	return c.showMap("POST", "/jobs/"+c.path(0)+"/release", body)
}

// bury parks a reserved job until a kick, and shows it.
func bury(c *call) error {
	body := map[string]any{}
	c.put(body, "attempt", c.attempt)
	c.put(body, "priority", c.priority)
	return c.showMap("POST", "/jobs/"+c.path(0)+"/bury", body)
}

// update changes a waiting job's delay, priority or body (the flags given),
// and shows the job as it now is.
func update(c *call) error {
	body := map[string]any{}
	c.put(body, "delay", c.delay)
	c.put(body, "priority", c.priority)
	c.put(body, "body", c.body)
	if len(body) == 0 {
		return usageError{"give --delay, --priority or --body"}
	}
	return c.showMap("PATCH", "/jobs/"+c.path(0), body)
}

// touch renews a reserved job's TTR, and shows the job (time_left).
func touch(c *call) error {
	body := map[string]any{}
	c.put(body, "attempt", c.attempt)
	return c.showMap("POST", "/jobs/"+c.path(0)+"/touch", body)
}

// put sets body[name] to v when the flag of that name is on the line: a
// flag left out leaves the field out, so the broker applies its default
// (the job's own priority, its topic's TTR, any attempt).
func (c *call) put(body map[string]any, name string, v any) {
	if c.given[name] {
		body[name] = v
	}
}

// kick makes up to N (default: all) buried (then dead) or else delayed
// jobs of a topic ready.
func kick(c *call) error {
	body := map[string]any{}
	if len(c.args) == 2 {
		n, err := strconv.Atoi(c.args[1])
		if err != nil || n < 0 {
			return usageError{fmt.Sprintf("N %q: want a whole number", c.args[1])}
		}
		body = map[string]any{"bound": n}
	}
	return c.showMap("POST", "/topics/"+c.path(0)+"/kick", body)
}

// pause stops pops from a topic for SECONDS (0 resumes it).
func pause(c *call) error {
	secs, err := strconv.ParseFloat(c.args[1], 64)
	if err != nil || !(secs >= 0 && secs <= maxSeconds) {
		return usageError{fmt.Sprintf("SECONDS %q: want a number from 0 to %d", c.args[1], int64(maxSeconds))}
	}
	return c.showMap("POST", "/topics/"+c.path(0)+"/pause", map[string]any{"seconds": secs})
}

// fail reports that a job failed (any delivery), with a reason.
func fail(c *call) error {
	reason := "failed from the command line"
	if len(c.args) == 2 {
		reason = c.args[1]
	}
	return c.showMap("POST", "/jobs/"+c.path(0)+"/fail", map[string]any{"error": reason})
}

// status reads, or sets, the server status of every broker on the Redis
// (--broker: one broker's own). It prints the status the broker announces,
// with the one it obeys while a stricter one waits out its grace, then
// each broker's own.
func status(c *call) error {
	method, path, body := "GET", "/status", any(nil)
	if len(c.args) == 1 {
		req := map[string]any{"status": c.args[0]}
		if c.broker != "" {
			req["broker"] = c.broker
		}
		method, body = "PUT", req
	} else if c.broker != "" {
		return usageError{"--broker names whose status to set: give the status too"}
	}
	answer, err := c.do(method, path, body)
	if err != nil {
		return err
	}
	return c.show(answer, func(w io.Writer) {
		m, _ := answer.(map[string]any)
		fmt.Fprintln(w, statusLine(m))
		brokers, _ := m["brokers"].([]any)
		if len(brokers) < 2 { // one broker: its line says it all
			return
		}
		for _, b := range brokers {
			if b, ok := b.(map[string]any); ok {
				fmt.Fprintf(w, "  broker %s: %s\n", text(b["name"]), statusLine(b))
			}
		}
	})
}

// statusLine is a status and, while a stricter one is pending, the one
// obeyed until then: "readonly (up until 2026-11-28T15:00:00Z)".
func statusLine(m map[string]any) string {
	line := text(m["status"])
	if at, ok := m["enforced_at"]; ok {
		line += " (" + text(m["enforced"]) + " until " + text(at) + ")"
	}
	return line
}
