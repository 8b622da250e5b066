package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/internal/redistest"
)

func TestMain(m *testing.M) { brokertest.Main(m) }

func broker(t *testing.T) *brokertest.Broker {
	t.Helper()
	return brokertest.Fresh(t, func(c *config.Config) { c.MaxBody = 1024; c.MaxBatch = 10 })
}

// call and mustCall send a request and decode its JSON answer.
var call, mustCall = brokertest.Call, brokertest.MustCall

func TestJobLifecycleOverHTTP(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	out := mustCall(t, 201, "POST", api+"/jobs", `{"id":"order-7","topic":"mail","body":"hello","delay":"0","TTR":"30","priority":10}`)
	if out["id"] != "order-7" {
		t.Fatalf("push answer %v", out)
	}
	job := mustCall(t, 200, "POST", api+"/pop", `{"topics":["none","mail"],"timeout":1}`)
	if job["id"] != "order-7" || job["body"] != "hello" || job["state"] != "reserved" ||
		job["TTR"] != 30.0 || job["priority"] != 10.0 || job["attempt"] != 1.0 || job["consumeNum"] != 1.0 {
		t.Fatalf("popped %v", job)
	}
	touched := mustCall(t, 200, "POST", api+"/jobs/order-7/touch", `{"attempt":1}`)
	if touched["state"] != "reserved" {
		t.Fatalf("touch %v", touched)
	}
	released := mustCall(t, 200, "POST", api+"/jobs/order-7/release", `{"attempt":1,"delay":60}`)
	if released["state"] != "delayed" || released["priority"] != 10.0 {
		t.Fatalf("release kept the priority? %v", released)
	}
	mustCall(t, 200, "POST", api+"/jobs/order-7/kick", ``)
	job = mustCall(t, 200, "GET", api+"/pop?topic=mail&timeout=1", ``)
	if job["attempt"] != 2.0 {
		t.Fatalf("second pop %v", job)
	}
	buried := mustCall(t, 200, "POST", api+"/jobs/order-7/bury?attempt=2", `{"priority":3}`)
	if buried["state"] != "buried" || buried["priority"] != 3.0 {
		t.Fatalf("bury %v", buried)
	}
	if peek := mustCall(t, 200, "GET", api+"/topics/mail/peek/buried", ``); peek["id"] != "order-7" {
		t.Fatalf("peek buried %v", peek)
	}
	if kicked := mustCall(t, 200, "POST", api+"/topics/mail/kick", `{"bound":5}`); kicked["kicked"] != 1.0 {
		t.Fatalf("kick topic %v", kicked)
	}
	job = mustCall(t, 200, "POST", api+"/pop", `{"topic":"mail"}`)
	mustCall(t, 409, "POST", api+"/jobs/order-7/ack", `{"attempt":2}`) // attempt 3 is current
	mustCall(t, 200, "POST", api+"/jobs/order-7/ack", `{"attempt":3}`)
	mustCall(t, 404, "GET", api+"/jobs/order-7", ``)
	if code, _ := call(t, "GET", api+"/pop?topic=mail", ``); code != 204 {
		t.Fatalf("pop of an empty topic: %d, want 204", code)
	}
	stats := mustCall(t, 200, "GET", api+"/stats", ``)
	if stats["total_jobs"] != 1.0 || stats["total_deletes"] != 1.0 || stats["total_reserves"] != 3.0 {
		t.Fatalf("stats %v", stats)
	}
	// push, three pops, a stale ack and an ack went through the batches (and the empty pops).
	if ops, calls := stats["batched_operations"].(float64), stats["batch_script_calls"].(float64); ops < 6 || calls < 1 || calls > ops {
		t.Fatalf("batch stats %v", stats)
	}
	_ = job
}

func TestBatchAndTopics(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	out := mustCall(t, 201, "POST", api+"/jobs/batch",
		`{"jobs":[{"topic":"a","body":"1"},{"topic":"b","body":"2","delay":30},{"topic":"a/x","body":"3"}]}`)
	if ids := out["ids"].([]any); len(ids) != 3 {
		t.Fatalf("batch ids %v", out)
	}
	list := mustCall(t, 200, "GET", api+"/topics", ``)
	if list["total"] != 3.0 {
		t.Fatalf("topics %v", list)
	}
	slash := mustCall(t, 200, "GET", api+"/topics/a%2Fx", ``)
	if slash["name"] != "a/x" || slash["ready"] != 1.0 {
		t.Fatalf("topic with a slash: %v", slash)
	}
	paused := mustCall(t, 200, "POST", api+"/topics/a/pause", `{"seconds":60}`)
	if paused["paused"] != true {
		t.Fatalf("pause %v", paused)
	}
	if code, _ := call(t, "GET", api+"/pop?topic=a", ``); code != 204 {
		t.Fatalf("pop of a paused topic: %d", code)
	}
	mustCall(t, 200, "POST", api+"/topics/a/pause", `{"seconds":0}`)
	mustCall(t, 200, "GET", api+"/pop?topic=a", ``)
	mustCall(t, 404, "GET", api+"/topics/nothing", ``)
}

func TestBadInput(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"taken","topic":"t","body":"x"}`)
	tests := []struct {
		name, method, path, body string
		want                     int
		says                     string
	}{
		{"malformed JSON", "POST", "/jobs", `{"topic":`, 400, "malformed JSON"},
		{"not an object", "POST", "/jobs", `[1,2]`, 400, "want a JSON object"},
		{"trailing data", "POST", "/jobs", `{"topic":"t","body":"x"} {}`, 400, "trailing"},
		{"body a number", "POST", "/jobs", `{"topic":"t","body":1}`, 400, "body must be a string, an object or an array, got 1"},
		{"body true", "POST", "/jobs", `{"topic":"t","body":true}`, 400, "body must be a string, an object or an array, got true"},
		{"body null", "POST", "/jobs", `{"topic":"t","body":null}`, 400, "body must be a string, an object or an array, got null"},
		{"delay of the wrong type", "POST", "/jobs", `{"topic":"t","body":"x","delay":true}`, 400, "delay must be a number"},
		{"negative delay", "POST", "/jobs", `{"topic":"t","body":"x","delay":-1}`, 400, "delay must be from 0"},
		{"TTR not a number", "POST", "/jobs", `{"topic":"t","body":"x","TTR":"soon"}`, 400, "ttr must be a number"},
		{"priority too big", "POST", "/jobs", `{"topic":"t","body":"x","priority":4294967296}`, 400, "priority must be a whole number"},
		{"fractional priority", "POST", "/jobs", `{"topic":"t","body":"x","priority":1.5}`, 400, "priority must be a whole number"},
		{"missing topic", "POST", "/jobs", `{"body":"x"}`, 400, "topic is missing"},
		{"missing body", "POST", "/jobs", `{"topic":"t"}`, 400, "body is missing"},
		{"bad topic name", "POST", "/jobs", `{"topic":"a b","body":"x"}`, 400, "topic name"},
		{"topic starting with -", "POST", "/jobs", `{"topic":"-a","body":"x"}`, 400, "starts with '-'"},
		{"topic too long", "POST", "/jobs", `{"topic":"` + strings.Repeat("t", 201) + `","body":"x"}`, 400, "limit is 200"},
		{"all-digit client id", "POST", "/jobs", `{"id":"123","topic":"t","body":"x"}`, 400, "all digits"},
		{"duplicate client id", "POST", "/jobs", `{"id":"taken","topic":"t","body":"y"}`, 409, "already has this id"},
		{"body over max_body", "POST", "/jobs", `{"topic":"t","body":"` + strings.Repeat("x", 1025) + `"}`, 413, "limit is 1024"},
		{"request far over the limit", "POST", "/jobs", `{"topic":"t","body":"` + strings.Repeat("x", 200<<10) + `"}`, 413, "too large"},
		{"batch over max_batch", "POST", "/jobs/batch", `{"jobs":[` + strings.TrimSuffix(strings.Repeat(`{"topic":"t","body":"x"},`, 11), ",") + `]}`, 400, "1 to 10 jobs"},
		{"batch with one bad job", "POST", "/jobs/batch", `{"jobs":[{"topic":"t","body":"x"},{"topic":"t"}]}`, 400, "job 1"},
		{"names differing only in case", "POST", "/jobs", `{"topic":"a","Topic":"b","body":"x"}`, 400, `field "Topic" is given twice`},
		{"a field given twice", "POST", "/jobs", `{"topic":"a","body":"x","body":"y"}`, 400, `field "body" is given twice`},
		{"names differing in case inside a batch", "POST", "/jobs/batch", `{"jobs":[{"topic":"a","body":"x","BODY":"y"}]}`, 400, "job 0"},
		{"a batch repeating a client id", "POST", "/jobs/batch", `{"jobs":[{"id":"twice","topic":"t","body":"1"},{"topic":"t","body":"2"},{"id":"twice","topic":"t","body":"3"}]}`, 400, `job 2: invalid: its id "twice" is job 0's too`},
		{"a hex float", "POST", "/jobs", `{"topic":"t","body":"x","delay":"0x1p4"}`, 400, "delay must be a number"},
		{"Inf as a string", "POST", "/jobs", `{"topic":"t","body":"x","TTR":"Inf"}`, 400, "ttr must be a number"},
		{"underscores in a number", "POST", "/jobs", `{"topic":"t","body":"x","priority":"1_000"}`, 400, "priority must be a number"},
		{"invalid UTF-8", "POST", "/jobs", "{\"topic\":\"t\",\"body\":\"\xff\xfe\"}", 400, "not valid UTF-8"},
		{"both expiries", "POST", "/jobs", `{"topic":"t","body":"x","expires_in":5,"expires_at":2000000000}`, 400, "not both"},
		{"negative expires_in", "POST", "/jobs", `{"topic":"t","body":"x","expires_in":-5}`, 400, "expires_in must be from 0"},
		{"huge expires_at", "POST", "/jobs", `{"topic":"t","body":"x","expires_at":1e300}`, 400, "expires_at must be a Unix time"},
		{"expires_at of the wrong type", "POST", "/jobs", `{"topic":"t","body":"x","expires_at":"tomorrow"}`, 400, "expires_at must be a number"},
		{"pop without topics", "POST", "/pop", `{"timeout":1}`, 400, "topics is missing"},
		{"pop topics of the wrong type", "POST", "/pop", `{"topics":"t"}`, 400, "array of strings"},
		{"pop with a bad topic", "POST", "/pop", `{"topics":["ok","no way"]}`, 400, "topic name"},
		{"GET pop without topic", "GET", "/pop", ``, 400, "topic="},
		{"GET pop bad timeout", "GET", "/pop?topic=t&timeout=x", ``, 400, "timeout"},
		{"unknown numeric id", "GET", "/jobs/999999", ``, 404, "not found"},
		{"unknown client id", "POST", "/jobs/nobody/ack", ``, 404, "not found"},
		{"ack with a bad attempt", "POST", "/jobs/taken/ack", `{"attempt":"first"}`, 400, "attempt must be a number"},
		{"touch a ready job", "POST", "/jobs/taken/touch", ``, 409, "job is ready"},
		{"pause without seconds", "POST", "/topics/t/pause", `{}`, 400, "seconds is missing"},
		{"pause an unknown topic", "POST", "/topics/nothing/pause", `{"seconds":1}`, 404, "not found"},
		{"peek a bad state", "GET", "/topics/t/peek/reserved", ``, 400, "peek ready"},
		{"no such endpoint", "GET", "/nowhere", ``, 404, "no such endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := call(t, tt.method, api+tt.path, tt.body)
			msg, _ := out["error"].(string)
			if code != tt.want || !strings.Contains(msg, tt.says) {
				t.Fatalf("status %d %q, want %d with %q", code, msg, tt.want, tt.says)
			}
		})
	}
	// Nothing above changed the job store.
	stats := mustCall(t, 200, "GET", api+"/stats", ``)
	if stats["total_jobs"] != 1.0 || stats["current_jobs_ready"] != 1.0 {
		t.Fatalf("bad input changed the store: %v", stats)
	}
}

// With Redis down the API answers 503 with the reason and keeps running;
// when Redis is back it serves again, with no restart.
func TestRedisDownThenBack(t *testing.T) {
	srv := redistest.Start(t)
	b := brokertest.Start(t, srv, nil)
	api := b.URL + "/api/v1"
	mustCall(t, 201, "POST", api+"/jobs", `{"topic":"t","body":"kept"}`)
	mustCall(t, 200, "GET", b.URL+"/readyz", ``)
	time.Sleep(1100 * time.Millisecond) // AOF everysec: let the push reach the disk
	srv.Kill()
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/api/v1/jobs", `{"topic":"t","body":"x"}`},
		{"GET", "/api/v1/pop?topic=t", ``},
		{"GET", "/api/v1/stats", ``},
		{"GET", "/readyz", ``},
	} {
		code, out := call(t, c.method, b.URL+c.path, c.body)
		msg, _ := out["error"].(string)
		if code != 503 || !strings.Contains(msg, "redis") {
			t.Fatalf("%s %s with Redis down: %d %v, want 503 naming Redis", c.method, c.path, code, out)
		}
	}
	mustCall(t, 200, "GET", b.URL+"/healthz", ``)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute) // only a broker that never recovers waits it out
	for {
		code, job := call(t, "GET", api+"/pop?topic=t", ``)
		if code == 200 {
			if job["body"] != "kept" {
				t.Fatalf("after recovery got %v", job)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no recovery: %d %v", code, job)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestLongPollOverHTTP(t *testing.T) {
	b := broker(t)
	done := make(chan map[string]any, 1)
	go func() {
		resp, err := http.Post(b.URL+"/api/v1/pop", "application/json", bytes.NewBufferString(`{"topics":["lp"],"timeout":60}`))
		if err != nil {
			t.Error(err)
			done <- nil
			return
		}
		defer resp.Body.Close()
		var job map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&job); err != nil {
			t.Error(err)
		}
		done <- job
	}()
	brokertest.Eventually(t, "the long poll waiting", func() bool { return b.Dispatcher.WaitingOn("lp") == 1 })
	mustCall(t, 201, "POST", b.URL+"/api/v1/jobs", `{"topic":"lp","body":"woke"}`)
	select {
	case job := <-done:
		if job["body"] != "woke" {
			t.Fatalf("got %v", job)
		}
	case <-time.After(90 * time.Second): // the poll's 60 s timeout would answer 204 first
		t.Fatal("long poll did not return after the push")
	}
}

// Over [jobs] max_waiting, a long poll is refused with 429 and the reason.
func TestWaitingLimit(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) { c.MaxWaiting = 2 })
	done := make(chan int, 2)
	for range 2 {
		go func() {
			// 60 s, far past the test: they end when two jobs come (below),
			// not when a loaded machine lets their timeout pass first.
			code, _ := call(t, "GET", b.URL+"/api/v1/pop?topic=idle&timeout=60", ``)
			done <- code
		}()
	}
	brokertest.Eventually(t, "two long polls waiting", func() bool { return b.Dispatcher.WaitingOn("idle") == 2 })
	code, out := call(t, "GET", b.URL+"/api/v1/pop?topic=idle&timeout=2", ``)
	if msg, _ := out["error"].(string); code != http.StatusTooManyRequests || !strings.Contains(msg, "max_waiting") {
		t.Fatalf("third long poll: %d %v, want 429 naming [jobs] max_waiting", code, out)
	}
	if code, _ := call(t, "GET", b.URL+"/api/v1/pop?topic=idle", ``); code != http.StatusNoContent {
		t.Fatalf("a pop that does not wait is not limited: %d", code)
	}
	for range 2 {
		mustCall(t, 201, "POST", b.URL+"/api/v1/jobs", `{"topic":"idle","body":"woke"}`)
	}
	for range 2 {
		if code := <-done; code != http.StatusOK {
			t.Fatalf("waiting poll ended with %d, want 200 with a job", code)
		}
	}
}

// An events stream counts in [jobs] max_waiting for a long poll too, as a
// long poll counts for a stream: the cap bounds the memory of every kind of
// wait together (docs/operations.md, "Memory of waiting consumers").
func TestWaitingLimitCountsEventsStreams(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) { c.MaxWaiting = 1 })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", b.URL+"/api/v1/events?topics=idle", nil) // fixed and valid
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("events stream: %v %v", resp, err)
	}
	defer resp.Body.Close()
	code, out := call(t, "GET", b.URL+"/api/v1/pop?topic=idle&timeout=2", ``)
	if msg, _ := out["error"].(string); code != http.StatusTooManyRequests || !strings.Contains(msg, "max_waiting") {
		t.Fatalf("a long poll beside an events stream: %d %v, want 429 naming [jobs] max_waiting", code, out)
	}
}

// An ack can carry the next pop: one request per job.
func TestAckAndPop(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"first","topic":"chain","body":"1"}`)
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"second","topic":"chain","body":"2"}`)
	job := mustCall(t, 200, "POST", api+"/pop", `{"topics":["chain"]}`)
	next := mustCall(t, 200, "POST", api+"/jobs/first/ack", `{"attempt":1,"next":{"topics":["chain"],"timeout":1}}`)
	if job["id"] != "first" || next["id"] != "second" || next["state"] != "reserved" {
		t.Fatalf("popped %v, then %v", job, next)
	}
	mustCall(t, 404, "GET", api+"/jobs/first", ``)
	if code, _ := call(t, "POST", api+"/jobs/second/ack", `{"attempt":1,"next":{"topics":["chain"]}}`); code != 204 {
		t.Fatalf("ack with nothing next: %d, want 204", code)
	}
	mustCall(t, 404, "GET", api+"/jobs/second", ``)
	// A failed ack pops nothing.
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"third","topic":"chain","body":"3"}`)
	mustCall(t, 404, "POST", api+"/jobs/nobody/ack", `{"next":{"topics":["chain"]}}`)
	if got := mustCall(t, 200, "GET", api+"/jobs/third", ``); got["state"] != "ready" {
		t.Fatalf("a failed ack popped: %v", got)
	}
	mustCall(t, 400, "POST", api+"/jobs/third/ack", `{"next":{"topics":"chain"}}`)
}

// A batch consumer pops several jobs in one request and acks several in one
// request, each ack on its own; the ack can carry the next batch pop.
func TestBatchPopAndAck(t *testing.T) {
	b := broker(t) // max_batch 10
	api := b.URL + "/api/v1"
	mustCall(t, 201, "POST", api+"/jobs/batch",
		`{"jobs":[{"topic":"w","body":"1"},{"topic":"w","body":"2"},{"topic":"w","body":"3"},{"topic":"w","body":"4"},{"topic":"w","body":"5"}]}`)

	bodies := func(out map[string]any) (got []string, ids []string, attempts []float64) {
		for _, j := range out["jobs"].([]any) {
			job := j.(map[string]any)
			got = append(got, job["body"].(string))
			ids = append(ids, job["id"].(string))
			attempts = append(attempts, job["attempt"].(float64))
		}
		return
	}
	out := mustCall(t, 200, "POST", api+"/pop", `{"topics":["w"],"count":2,"timeout":1}`)
	got, ids, _ := bodies(out)
	if strings.Join(got, ",") != "1,2" {
		t.Fatalf("pop of 2 got %v", got)
	}
	out = mustCall(t, 200, "GET", api+"/pop?topic=w&count=2", ``)
	got, ids2, _ := bodies(out)
	if strings.Join(got, ",") != "3,4" {
		t.Fatalf("GET pop of 2 got %v", got)
	}

	// Ack four: two fine, one a stale attempt, one unknown; then pop up to 10.
	req := `{"jobs":[{"id":"` + ids[0] + `","attempt":1},{"id":` + ids[1] + `},{"id":"` + ids2[0] + `","attempt":7},{"id":"nope"}],` +
		`"next":{"topics":["w"],"count":10,"timeout":1}}`
	out = mustCall(t, 200, "POST", api+"/ack", req)
	if acked := out["acked"].([]any); len(acked) != 2 || acked[0] != ids[0] || acked[1] != ids[1] {
		t.Fatalf("acked %v, want %v", out["acked"], ids)
	}
	failed := out["failed"].([]any)
	if len(failed) != 2 || failed[0].(map[string]any)["status"] != 409.0 || failed[1].(map[string]any)["status"] != 404.0 {
		t.Fatalf("failed %v, want a 409 and a 404", failed)
	}
	if got, _, _ := bodies(out); strings.Join(got, ",") != "5" {
		t.Fatalf("next got %v, want the last job", got)
	}

	// An ack of one job that carries a batch pop answers like a batch pop.
	mustCall(t, 201, "POST", api+"/jobs/batch", `{"jobs":[{"topic":"w","body":"6"},{"topic":"w","body":"7"}]}`)
	out = mustCall(t, 200, "POST", api+"/jobs/"+ids2[0]+"/ack", `{"next":{"topics":["w"],"count":5}}`)
	if got, _, _ := bodies(out); strings.Join(got, ",") != "6,7" {
		t.Fatalf("ack with a batch pop got %v", got)
	}
	if code, _ := call(t, "POST", api+"/pop", `{"topics":["w"],"count":3}`); code != 204 {
		t.Fatalf("batch pop of an empty topic: %d, want 204", code)
	}

	for _, bad := range []struct{ method, path, body string }{
		{"POST", "/pop", `{"topics":["w"],"count":11}`}, // over max_batch
		{"POST", "/pop", `{"topics":["w"],"count":0}`},
		{"GET", "/pop?topic=w&count=x", ``},
		{"POST", "/ack", `{"jobs":[]}`},
		{"POST", "/ack", `{"jobs":[{"attempt":1}]}`},
		{"POST", "/ack", `{"jobs":[{"id":true}]}`},
		{"POST", "/ack", `{"jobs":[{"id":"1"}],"next":{"topics":["w"],"count":11}}`},
		{"POST", "/ack", `{"jobs":"1"}`},
	} {
		if code, out := call(t, bad.method, api+bad.path, bad.body); code != 400 {
			t.Errorf("%s %s %s: %d %v, want 400", bad.method, bad.path, bad.body, code, out)
		}
	}
	if problems, err := b.Pool.Check(t.Context()); err != nil || len(problems) > 0 {
		t.Fatal(problems, err)
	}
}

func TestFlushAndDeleteTopic(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	mustCall(t, 201, "POST", api+"/jobs/batch",
		`{"jobs":[{"topic":"f","body":"1"},{"topic":"f","body":"2","delay":30},{"topic":"f","body":"3"},{"topic":"g","body":"4"}]}`)
	held := mustCall(t, 200, "GET", api+"/pop?topic=f", ``)
	if out := mustCall(t, 200, "POST", api+"/topics/f/flush", ``); out["flushed"] != 3.0 {
		t.Fatalf("flush: %v, want 3 (ready, delayed and reserved)", out)
	}
	if st := mustCall(t, 200, "GET", api+"/topics/f", ``); st["ready"] != 0.0 || st["delayed"] != 0.0 || st["reserved"] != 0.0 {
		t.Fatalf("after the flush: %v", st)
	}
	mustCall(t, 404, "POST", api+"/jobs/"+held["id"].(string)+"/ack", ``) // its job was flushed
	mustCall(t, 200, "POST", api+"/topics/g/pause", `{"seconds":60}`)
	if out := mustCall(t, 200, "DELETE", api+"/topics/g", ``); out["deleted_jobs"] != 1.0 {
		t.Fatalf("delete: %v", out)
	}
	mustCall(t, 404, "GET", api+"/topics/g", ``)
	mustCall(t, 400, "POST", api+"/topics/bad~name/flush", ``)
	if st := mustCall(t, 200, "GET", api+"/stats", ``); st["total_flushed"] != 4.0 {
		t.Fatalf("stats: total_flushed %v, want 4", st["total_flushed"])
	}
}

// Expiry over HTTP: expires_in and expires_at on a push, max_age and
// expire_to as topic settings; an expired job is never popped.
func TestExpiryOverHTTP(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	mustCall(t, 200, "PUT", api+"/topics/src/config", `{"expire_to":"dead","max_age":3600}`)
	// A second to live: the look at it below must come first, with margin
	// for a loaded machine.
	in := mustCall(t, 201, "POST", api+"/jobs", `{"topic":"src","body":"soon","expires_in":1}`)
	mustCall(t, 201, "POST", api+"/jobs", fmt.Sprintf(`{"topic":"src","body":"past","expires_at":%d}`, time.Now().Unix()-1))
	mustCall(t, 201, "POST", api+"/jobs", `{"topic":"src","body":"capped","expires_in":999999}`)
	j := mustCall(t, 200, "GET", api+"/jobs/"+in["id"].(string), ``)
	if _, ok := j["expires"].(string); !ok {
		t.Fatalf("a job with an expiry does not show it: %v", j)
	}
	time.Sleep(1100 * time.Millisecond) // past its expiry: a lower bound
	got := mustCall(t, 200, "GET", api+"/pop?topic=src", ``)
	if got["body"] != "capped" {
		t.Fatalf("pop: %v, want the job that has not expired", got)
	}
	exp, _ := time.Parse(time.RFC3339Nano, got["expires"].(string))
	if d := time.Until(exp); d > time.Hour || d < 59*time.Minute {
		t.Fatalf("max_age 3600 left the job %v to live", d)
	}
	// The expired two move to dead within the timer's round (max_sleep 1 s).
	// Each moves as it expires: "past" at once, "soon" a second later, in
	// whichever order the timers' rounds and the pop above find them.
	want := map[string]bool{"soon": true, "past": true}
	for range 2 {
		moved := mustCall(t, 200, "GET", api+"/pop?topic=dead&timeout=60", ``) // at once or a round later: 60 s only for a failure
		if body, _ := moved["body"].(string); !want[body] {
			t.Fatalf("pop from expire_to: %v, want one of %v", moved, want)
		} else {
			delete(want, body)
		}
		if _, ok := moved["expires"]; ok {
			t.Fatalf("a moved job still expires: %v", moved)
		}
	}
	if st := mustCall(t, 200, "GET", api+"/topics/src", ``); st["total_expired"] != 2.0 {
		t.Fatalf("topic stats: total_expired %v, want 2", st["total_expired"])
	}
	if problems, err := b.Pool.Check(t.Context()); err != nil || len(problems) > 0 {
		t.Fatalf("check: %v %v", problems, err)
	}
}
