package pool

import (
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

// Texts the scripts keep cut to 1 KiB (a progress log's line, a job
// history's detail, an event's detail) are cut at the start of the UTF-8
// character the cut would fall inside (issue 49): a line cut within one
// read back ending in U+FFFD. Each row ends a 1,023-byte ASCII prefix with
// a character of 2, 3 or 4 bytes, which a cut at 1,024 would split.
func TestTextsAreCutBetweenCharacters(t *testing.T) {
	p, ctx := newPool(t)
	prefix := strings.Repeat("a", 1023)
	for _, tc := range []struct {
		name, char string
	}{
		{"two bytes", "é"},
		{"three bytes", "€"},
		{"four bytes", "😀"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := "cut-" + strings.ReplaceAll(tc.name, " ", "-")
			if err := p.SetTopicConfig(ctx, topic, job.TopicConfig{"job_history": "20", "events": "true", "max_attempts": "5",
				"backoff": "fixed", "backoff_base": "60"}); err != nil {
				t.Fatal(err)
			}
			text := prefix + tc.char
			id := num(mustPush(t, p, ctx, job.Spec{Topic: topic, Body: "x", TTR: time.Minute}))
			j := mustPop(t, p, ctx, topic)
			if _, err := p.Progress(ctx, id, j.Attempt(), "", text); err != nil {
				t.Fatal(err)
			}
			if _, err := p.Fail(ctx, id, j.Attempt(), text); err != nil {
				t.Fatal(err)
			}
			got, err := p.Peek(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Log) != 1 || got.Log[0].Line != prefix {
				t.Errorf("the progress log's line: %+v, want the %d-byte prefix", lineLengths(got.Log), len(prefix))
			}
			var failed []string
			for _, e := range got.History {
				if e.Event == "failed" {
					failed = append(failed, e.Detail)
				}
			}
			if len(failed) != 1 || failed[0] != prefix {
				t.Errorf("the history's failed detail: %d entries, want the %d-byte prefix (got %v)", len(failed), len(prefix), lengths(failed))
			}
			events, err := p.ReadEvents(ctx, p.EventsBucket(topic), "0", 100, 0)
			if err != nil {
				t.Fatal(err)
			}
			var detail []string
			for _, e := range events {
				if e.Topic == topic && e.Type == "failed" {
					detail = append(detail, e.Detail)
					if !e.Cut {
						t.Errorf("the failed event is not marked cut")
					}
				}
			}
			if len(detail) != 1 || detail[0] != prefix {
				t.Errorf("the failed event's detail: want the %d-byte prefix (got %v)", len(prefix), lengths(detail))
			}
		})
	}
}

func lineLengths(log []job.LogLine) []int {
	var n []int
	for _, l := range log {
		n = append(n, len(l.Line))
	}
	return n
}

func lengths(s []string) []int {
	var n []int
	for _, x := range s {
		n = append(n, len(x))
	}
	return n
}
