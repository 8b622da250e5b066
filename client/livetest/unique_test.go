package livetest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/client"
)

// Unique pushes: a held key in mode reject is a 409 naming its holder, a
// replace or debounce of a waiting job says so and names that job, and a
// reserved holder is not changed: a fresh job takes the key.
func TestGoClientUnique(t *testing.T) {
	b := broker(t)
	c := client.New(b.URL, nil)
	ctx := context.Background()
	key := func(k, mode string) *client.Unique { return &client.Unique{Key: k, For: time.Minute, Mode: mode} }

	first, err := c.Push(ctx, client.Job{ID: "welcome-42", Topic: "mail", Body: "hi", Unique: key("user-42", "")})
	if err != nil || first.ID != "welcome-42" || first.Unique != "" {
		t.Fatalf("first push: %+v %v", first, err)
	}
	_, err = c.Push(ctx, client.Job{ID: "welcome-42-again", Topic: "mail", Body: "hi", Unique: key("user-42", client.UniqueReject)})
	if !client.IsConflict(err) || client.HeldBy(err) != "welcome-42" {
		t.Fatalf("held key: %v (held by %q), want a 409 naming welcome-42", err, client.HeldBy(err))
	}

	report, err := c.Push(ctx, client.Job{Topic: "reports", Body: "v1", Delay: 3600, Unique: key("daily", client.UniqueReplace)})
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Push(ctx, client.Job{ID: "not-used", Topic: "reports", Body: "v2", Unique: key("daily", client.UniqueReplace)})
	if err != nil || again != (client.Pushed{ID: report.ID, InternalID: report.InternalID, Unique: client.UniqueReplaced}) {
		t.Fatalf("replace: %+v %v, want %s replaced", again, err, report.ID)
	}
	if j, err := c.Get(ctx, report.ID); err != nil || j.Body != "v2" || j.State != "ready" {
		t.Fatalf("the replaced job: %+v %v", j, err)
	}
	if d, err := c.Push(ctx, client.Job{Topic: "reports", Body: "v3", Delay: 5, Unique: key("daily", client.UniqueDebounce)}); err != nil ||
		d.ID != report.ID || d.Unique != client.UniqueDebounced {
		t.Fatalf("debounce: %+v %v", d, err)
	}
	if j, err := c.Pop(ctx, []string{"reports"}, 0); err != nil || j != nil {
		t.Fatalf("a debounced job due in 5 s was popped: %+v %v", j, err)
	}

	// A reserved holder is never changed: the push stores a fresh job.
	if _, err := c.Push(ctx, client.Job{Topic: "index", Body: "a", Unique: key("k", client.UniqueReplace)}); err != nil {
		t.Fatal(err)
	}
	popped, err := c.Pop(ctx, []string{"index"}, time.Second)
	if err != nil || popped == nil {
		t.Fatalf("pop: %+v %v", popped, err)
	}
	fresh, err := c.Push(ctx, client.Job{Topic: "index", Body: "b", Unique: key("k", client.UniqueReplace)})
	if err != nil || fresh.ID == popped.ID || fresh.Unique != "" {
		t.Fatalf("replace of a reserved job: %+v %v, want a new job", fresh, err)
	}

	// Bad input is a 400 that says what is wrong; a batch may not repeat a key.
	if _, err := c.Push(ctx, client.Job{Topic: "m", Body: "x", Unique: &client.Unique{Key: "k"}}); status(err) != 400 {
		t.Fatalf("no window: %v", err)
	}
	if _, err := c.Push(ctx, client.Job{Topic: "m", Body: "x", Unique: key("k", "sometimes")}); status(err) != 400 {
		t.Fatalf("a bad mode: %v", err)
	}
	if _, err := c.PushBatch(ctx, []client.Job{{Topic: "m", Body: "a", Unique: key("k", "")}, {Topic: "m", Body: "b", Unique: key("k", "")}}); status(err) != 400 {
		t.Fatalf("a batch repeating a key: %v", err)
	}
}

// A unique push retried after a 503 that came after the broker stored the
// job (its answer lost on the way) is stored once: with an ID the retry's
// 409 is the id's, taken as stored; without one it names the job the first
// try stored, or, in mode replace, replaces it with the same body. A 503
// before the broker saw the push, then a key held by another job, is that
// job's 409.
func TestGoClientUniqueRetry(t *testing.T) {
	b := broker(t)
	ctx := context.Background()
	key := func(mode string) *client.Unique { return &client.Unique{Key: "k", For: time.Minute, Mode: mode} }
	for i, tc := range []struct {
		name        string
		reachBroker bool // the first try reached the broker (only its answer was lost)
		holder      *client.Job
		job         client.Job
		wantErr     bool
		wantUnique  string
		wantHeldBy  string // "stored": the job the first try stored
	}{
		{name: "with an id: the id's 409 is stored", reachBroker: true,
			job: client.Job{ID: "mine-0", Body: "x", Unique: key("")}},
		{name: "without an id: held by the job the first try stored", reachBroker: true,
			job: client.Job{Body: "x", Unique: key("")}, wantErr: true, wantHeldBy: "stored"},
		{name: "replace without an id: the first try's job, replaced", reachBroker: true,
			job: client.Job{Body: "x", Unique: key(client.UniqueReplace)}, wantUnique: client.UniqueReplaced},
		{name: "with an id: held by another job", holder: &client.Job{ID: "theirs", Body: "y", Unique: key("")},
			job: client.Job{ID: "mine-3", Body: "x", Unique: key("")}, wantErr: true, wantHeldBy: "theirs"},
	} {
		topic := fmt.Sprintf("retry-%d", i)
		t.Run(tc.name, func(t *testing.T) {
			direct := client.New(b.URL, nil)
			if tc.holder != nil {
				tc.holder.Topic = topic
				if _, err := direct.Push(ctx, *tc.holder); err != nil {
					t.Fatal(err)
				}
			}
			var sent atomic.Int32
			c := client.NewWithOptions(losesFirstPush(t, b.URL, tc.reachBroker, &sent), client.Options{MaxBackoff: 10 * time.Millisecond})
			tc.job.Topic = topic
			got, err := c.Push(ctx, tc.job)
			if sent.Load() != 2 {
				t.Fatalf("%d tries, want 2", sent.Load())
			}
			ids := jobIDs(t, b, topic)
			if len(ids) != 1 {
				t.Fatalf("%d jobs in %s (%v), want 1: %+v %v", len(ids), topic, ids, got, err)
			}
			if (err != nil) != tc.wantErr || got.Unique != tc.wantUnique {
				t.Fatalf("%+v %v; want error %v, unique %q", got, err, tc.wantErr, tc.wantUnique)
			}
			want := tc.wantHeldBy
			if want == "stored" {
				want = ids[0]
			}
			if client.HeldBy(err) != want {
				t.Fatalf("%v: held by %q, want %q", err, client.HeldBy(err), want)
			}
			if err == nil && got.ID != ids[0] {
				t.Fatalf("pushed %+v, but the topic's job is %s", got, ids[0])
			}
			var e *client.Error
			if err != nil && (!errors.As(err, &e) || !e.Retried) {
				t.Fatalf("%v: not marked as a retry's answer", err)
			}
		})
	}
}

// losesFirstPush is a proxy to the broker at target that answers the first
// push 503: after passing it on (its answer lost), or without. sent counts
// the pushes it saw.
func losesFirstPush(t *testing.T, target string, reachBroker bool, sent *atomic.Int32) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/jobs" || sent.Add(1) > 1 {
			proxy.ServeHTTP(w, r)
			return
		}
		if reachBroker {
			proxy.ServeHTTP(httptest.NewRecorder(), r)
		}
		w.Header().Set("Retry-After", "0")
		http.Error(w, `{"error":"request timeout"}`, http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// jobIDs are the ids of the ready jobs of topic (the first 50).
func jobIDs(t *testing.T, b *brokertest.Broker, topic string) []string {
	t.Helper()
	out := brokertest.MustCall(t, 200, "GET", b.URL+"/api/v1/topics/"+topic+"/jobs?state=ready", "")
	var ids []string
	jobs, _ := out["jobs"].([]any)
	for _, j := range jobs {
		if m, ok := j.(map[string]any); ok {
			id, _ := m["id"].(string)
			ids = append(ids, id)
		}
	}
	return ids
}

func status(err error) int {
	var e *client.Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}
