package pool

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

func TestPurgeAndDeleteTopic(t *testing.T) {
	p, ctx := newPool(t)
	const ready = purgeStep + 7 // more than one step
	for i := range ready {
		mustPush(t, p, ctx, job.Spec{Topic: "f", Body: "x", TTR: time.Minute, ClientID: fmt.Sprintf("c-%d", i)})
	}
	mustPush(t, p, ctx, job.Spec{Topic: "f", Body: "later", Delay: time.Hour})
	reserved := mustPop(t, p, ctx, "f")
	buried := mustPop(t, p, ctx, "f")
	if _, err := p.Bury(ctx, buried.PublicID(), 0, 1); err != nil {
		t.Fatal(err)
	}
	mustPush(t, p, ctx, job.Spec{Topic: "other", Body: "stays"})

	n, err := p.Purge(ctx, "f", job.Ready, job.Delayed)
	if err != nil || n != ready-2+1 {
		t.Fatalf("purge ready and delayed: %d %v, want %d", n, err, ready-2+1)
	}
	st, err := p.TopicStats(ctx, "f")
	if err != nil || st.Ready != 0 || st.Delayed != 0 || st.Reserved != 1 || st.Buried != 1 {
		t.Fatalf("after the purge: %+v %v", st, err)
	}
	if _, err := p.Resolve(ctx, "c-500"); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("a purged job's client id still resolves: %v", err)
	}
	if problems, err := p.Check(ctx); err != nil || len(problems) > 0 {
		t.Fatalf("check after the purge: %v %v", problems, err)
	}
	if _, err := p.Pause(ctx, "f", PauseParams{For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if n, err := p.DeleteTopic(ctx, "f"); err != nil || n != 2 {
		t.Fatalf("delete topic: %d %v, want the reserved and the buried job", n, err)
	}
	if err := p.Delete(ctx, reserved.PublicID(), reserved.Attempt()); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("ack of a job whose topic was deleted: %v", err)
	}
	if _, err := p.TopicStats(ctx, "f"); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("a deleted (even paused) topic is still known: %v", err)
	}
	if got := mustPop(t, p, ctx, "other"); got.Body != "stays" {
		t.Fatalf("another topic lost its job: %+v", got)
	}
	if problems, err := p.Check(ctx); err != nil || len(problems) > 0 {
		t.Fatalf("check after the delete: %v %v", problems, err)
	}
	if _, err := p.Purge(ctx, "f", job.Gone); !errors.Is(err, job.ErrInvalid) {
		t.Fatalf("purge of state gone: %v", err)
	}
}

// A deleted topic forgets its run-time settings (docs/openapi.yaml's
// deleteTopic; api.md: a topic keeps its settings until it is deleted), so
// a topic of the same name starts from conf.ini's: a delete that left them
// gave the next user of the name another's keep_completed or deliver_to.
// conf.ini's own layer stays: it is the configuration, not the topic's.
func TestDeleteTopicForgetsRunSettings(t *testing.T) {
	p, ctx := newPool(t)
	for _, tc := range []struct {
		name    string
		topic   string
		file    job.TopicConfig // conf.ini's [topic.NAME]
		run     job.TopicConfig // set at run time
		deliver bool            // still marked as delivering after the delete
		raced   bool            // a push comes between the delete's purge and its forget
	}{
		{"run only", "ro", nil, job.TopicConfig{"keep_completed": "600", "max_items": "5"}, false, false},
		{"file stays", "fs", job.TopicConfig{"max_items": "9"}, job.TopicConfig{"max_items": "5", "job_history": "10"}, false, false},
		{"run delivery", "rd", nil, job.TopicConfig{"deliver_to": "http://127.0.0.1:1/x"}, false, false},
		{"file delivery", "fd", job.TopicConfig{"deliver_to": "http://127.0.0.1:1/y"}, job.TopicConfig{"deliver_to": "http://127.0.0.1:1/z"}, true, false},
		// The settings went only with an empty topic, and a delete racing
		// a producer answered 200 with them kept (9 times in 10).
		{"a push between purge and forget", "pr", nil, job.TopicConfig{"keep_completed": "600"}, false, true},
		{"a push between, delivery", "pd", nil, job.TopicConfig{"deliver_to": "http://127.0.0.1:1/w"}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.file != nil {
				if err := p.ApplyTopicConfig(ctx, nil, map[string]job.TopicConfig{tc.topic: tc.file}); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.SetTopicConfig(ctx, tc.topic, tc.run); err != nil {
				t.Fatal(err)
			}
			mustPush(t, p, ctx, job.Spec{Topic: tc.topic, Body: "x"})
			if tc.raced {
				if _, err := p.Purge(ctx, tc.topic, job.Stored...); err != nil {
					t.Fatal(err)
				}
				mustPush(t, p, ctx, job.Spec{Topic: tc.topic, Body: "pushed meanwhile"})
				if err := p.forgetDeletedTopic(ctx, tc.topic); err != nil {
					t.Fatal(err)
				}
			} else if _, err := p.DeleteTopic(ctx, tc.topic); err != nil {
				t.Fatal(err)
			}
			l, err := p.TopicConfig(ctx, tc.topic)
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Run) != 0 {
				t.Errorf("run-time settings after the delete: %v, want none", l.Run)
			}
			if fmt.Sprint(l.File) != fmt.Sprint(job.TopicConfig(tc.file)) && !(len(l.File) == 0 && len(tc.file) == 0) {
				t.Errorf("conf.ini's settings after the delete: %v, want %v", l.File, tc.file)
			}
			topics, err := p.WebhookTopics(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if marked := fmt.Sprint(topics) != fmt.Sprint(slicesWithout(topics, tc.topic)); marked != tc.deliver {
				t.Errorf("marked as delivering after the delete: %v, want %v (%v)", marked, tc.deliver, topics)
			}
			if problems, err := p.Check(ctx); err != nil || len(problems) > 0 {
				t.Fatalf("check after the delete: %v %v", problems, err)
			}
		})
	}
}

// slicesWithout is s without the elements equal to v.
func slicesWithout(s []string, v string) []string {
	var out []string
	for _, e := range s {
		if e != v {
			out = append(out, e)
		}
	}
	return out
}
