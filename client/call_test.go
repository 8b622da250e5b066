package client

// Tests of what the client decides on its own (retries, timeouts, the
// token), against scripted answers from an httptest server. The live tests
// against a real broker are in livetest/, a module of its own that may
// import the broker.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// answer is one scripted answer of the fake broker.
type answer struct {
	status     int
	body       string
	retryAfter string
	delay      time.Duration // before answering
}

// request is what the fake broker was sent.
type request struct {
	method, path, auth, body string
	rawPath                  string // as sent, escapes kept
}

// fake answers each request with the next of its answers (the last once
// they run out) and records what it was sent.
type fake struct {
	mu      sync.Mutex
	answers []answer
	got     []request
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.got = append(f.got, request{method: r.Method, path: r.URL.Path, auth: r.Header.Get("Authorization"),
		body: string(body), rawPath: r.URL.EscapedPath()})
	a := f.answers[0]
	if len(f.answers) > 1 {
		f.answers = f.answers[1:]
	}
	f.mu.Unlock()
	select {
	case <-time.After(a.delay):
	case <-r.Context().Done():
		return
	}
	if a.retryAfter != "" {
		w.Header().Set("Retry-After", a.retryAfter)
	}
	if a.body != "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

func (f *fake) paths() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, r := range f.got {
		out = append(out, r.path)
	}
	return out
}

// serve starts a fake broker with answers and a client of it with opts
// (quick backoffs unless opts say otherwise).
func serve(t *testing.T, opts Options, answers ...answer) (*Client, *fake) {
	t.Helper()
	f := &fake{answers: answers}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = time.Millisecond
	}
	return NewWithOptions(srv.URL, opts), f
}

var (
	unavailable = answer{status: 503, body: `{"error":"redis is down"}`}
	created     = answer{status: 201, body: `{"id":"j1"}`}
)

func TestRetriesOn503(t *testing.T) {
	for _, tc := range []struct {
		name    string
		retries int
		answers []answer
		tries   int
		wantErr int // the status of the error, 0: none
	}{
		{"succeeds on the third try", 0, []answer{unavailable, unavailable, created}, 3, 0},
		{"gives up after the default 3 retries", 0, []answer{unavailable}, 4, 503},
		{"retries as configured", 1, []answer{unavailable}, 2, 503},
		{"never, when negative", -1, []answer{unavailable}, 1, 503},
		{"not a 500", 0, []answer{{status: 500, body: `{"error":"bug"}`}}, 1, 500},
		{"not a 429", 0, []answer{{status: 429, body: `{"error":"too many"}`, retryAfter: "1"}}, 1, 429},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, f := serve(t, Options{Retries: tc.retries}, tc.answers...)
			_, err := c.Push(context.Background(), Job{Topic: "t", Body: "x"})
			if got := len(f.paths()); got != tc.tries {
				t.Errorf("%d tries, want %d", got, tc.tries)
			}
			if status(err) != tc.wantErr || (err == nil) != (tc.wantErr == 0) {
				t.Errorf("error %v, want status %d", err, tc.wantErr)
			}
			if tc.wantErr == 503 && tc.tries > 1 && !asError(err).Retried {
				t.Errorf("%v: not marked as the answer to a retry", err)
			}
		})
	}
}

// A retry waits the answer's Retry-After even past MaxBackoff.
func TestRetryAfterHonoured(t *testing.T) {
	c, f := serve(t, Options{}, answer{status: 503, body: `{"error":"busy"}`, retryAfter: "1"}, created)
	start := time.Now()
	if _, err := c.Push(context.Background(), Job{Topic: "t", Body: "x"}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < time.Second || len(f.paths()) != 2 {
		t.Fatalf("retried after %v with %d tries; want 2 tries, a second apart", took, len(f.paths()))
	}
}

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for h, want := range map[string]time.Duration{
		"": 0, "1": time.Second, " 3 ": 3 * time.Second, "0": 0, "-2": 0, "soon": 0,
		now.Add(2 * time.Second).Format(http.TimeFormat): 2 * time.Second,
		now.Add(-time.Hour).Format(http.TimeFormat):      0,
	} {
		if got := retryAfter(h, now); got != want {
			t.Errorf("Retry-After %q: %v, want %v", h, got, want)
		}
	}
}

func TestBackoffIsCapped(t *testing.T) {
	c := NewWithOptions("http://x", Options{MaxBackoff: time.Second})
	for try, want := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, time.Second, time.Second} {
		if got := c.backoff(try, 0); got != want {
			t.Errorf("try %d: %v, want %v", try, got, want)
		}
	}
	if got := c.backoff(100, 3*time.Second); got != 3*time.Second {
		t.Errorf("a Retry-After past the cap: %v, want it", got)
	}
}

// A push with an id that a retry finds stored was stored by the earlier try;
// the same 409 to a first try is a duplicate. A unique push's 409 names the
// job that holds its key: stored only when that is the push's own id.
func TestPushConflictOnRetry(t *testing.T) {
	conflict := answer{status: 409, body: `{"error":"duplicate id"}`}
	held := func(by string) answer {
		return answer{status: 409, body: `{"error":"unique key \"k\" of topic \"t\" is held by job ` + by + `","id":"` + by + `","internal_id":7}`}
	}
	key := &Unique{Key: "k", For: time.Minute}
	for _, tc := range []struct {
		name       string
		id         string
		unique     *Unique
		answers    []answer
		wantID     string
		wantErr    bool
		wantHolder string
	}{
		{"stored by the earlier try", "mine", nil, []answer{unavailable, conflict}, "mine", false, ""},
		{"a duplicate", "mine", nil, []answer{conflict}, "", true, ""},
		{"a dependency dead by the retry: not stored", "mine", nil, []answer{unavailable,
			{status: 409, body: `{"error":"after: job 5 is dead, so this job would be cancelled at once"}`}}, "", true, ""},
		{"no id: nothing to tell", "", nil, []answer{unavailable, conflict}, "", true, ""},
		{"unique: the id's 409 to a retry, stored", "mine", key, []answer{unavailable, conflict}, "mine", false, ""},
		{"unique: held by the job itself, stored", "mine", key, []answer{unavailable, held("mine")}, "mine", false, ""},
		{"unique: held by another job on a retry", "mine", key, []answer{unavailable, held("theirs")}, "", true, "theirs"},
		{"unique: held by the job's own id at once", "mine", key, []answer{held("mine")}, "", true, "mine"},
		{"unique without an id: held, maybe by the first try's job", "", key, []answer{unavailable, held("7")}, "", true, "7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := serve(t, Options{}, tc.answers...)
			p, err := c.Push(context.Background(), Job{ID: tc.id, Topic: "t", Body: "x", Unique: tc.unique})
			if p.ID != tc.wantID || (err != nil) != tc.wantErr || HeldBy(err) != tc.wantHolder {
				t.Fatalf("%+v %v (held by %q); want %q, error %v, held by %q", p, err, HeldBy(err), tc.wantID, tc.wantErr, tc.wantHolder)
			}
			if err != nil && (!IsConflict(err) || asError(err).Retried != (len(tc.answers) > 1)) {
				t.Fatalf("%v: want a 409, Retried %v", err, len(tc.answers) > 1)
			}
		})
	}
}

// What a unique push sends, and what its answer says.
func TestPushUnique(t *testing.T) {
	c, f := serve(t, Options{}, answer{status: 200, body: `{"id":"r1","internal_id":5,"unique":"replaced"}`})
	p, err := c.Push(context.Background(), Job{ID: "r2", Topic: "t", Body: "v2",
		Unique: &Unique{Key: "daily", For: 1500 * time.Millisecond, Mode: UniqueReplace}})
	if err != nil || p != (Pushed{ID: "r1", InternalID: 5, Unique: UniqueReplaced}) {
		t.Fatalf("%+v %v", p, err)
	}
	if want := `"unique":{"key":"daily","for":1.5,"mode":"replace"}`; !strings.Contains(f.got[0].body, want) {
		t.Fatalf("sent %s, want it to hold %s", f.got[0].body, want)
	}
	c, f = serve(t, Options{}, created)
	if _, err := c.Push(context.Background(), Job{Topic: "t", Unique: &Unique{Key: "k", For: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	if want := `"unique":{"key":"k","for":3600}`; !strings.Contains(f.got[0].body, want) {
		t.Fatalf("sent %s, want it to hold %s (no mode: gmq's default)", f.got[0].body, want)
	}
	var u Unique
	if err := json.Unmarshal([]byte(`{"key":"k","for":0.25,"mode":"debounce"}`), &u); err != nil ||
		u != (Unique{Key: "k", For: 250 * time.Millisecond, Mode: UniqueDebounce}) {
		t.Fatalf("read back: %+v %v", u, err)
	}
	if err := json.Unmarshal([]byte(`{"key":"k","for":1e300}`), &u); err == nil {
		t.Fatal("a window past time.Duration's range was read")
	}
}

// A job's group is sent as "group" when set, and not at all when "" (a
// broker from before groups refuses a field it does not know).
func TestPushGroup(t *testing.T) {
	c, f := serve(t, Options{}, created)
	for _, g := range []string{"tenant-42", ""} {
		if _, err := c.Push(context.Background(), Job{Topic: "t", Body: "x", Group: g}); err != nil {
			t.Fatal(err)
		}
	}
	if want := `"group":"tenant-42"`; !strings.Contains(f.got[0].body, want) {
		t.Errorf("sent %s, want it to hold %s", f.got[0].body, want)
	}
	if strings.Contains(f.got[1].body, "group") {
		t.Errorf("a job without a group sent %s", f.got[1].body)
	}
}

// A batch of jobs with ids, partly stored before a 503, is carried on one
// job at a time; without ids it is returned with the ids stored.
func TestPushBatchPartlyStored(t *testing.T) {
	partly := answer{status: 503, body: `{"error":"redis is down","stored_ids":["a"]}`}
	ctx := context.Background()
	c, f := serve(t, Options{}, partly, answer{status: 409, body: `{"error":"duplicate"}`}, answer{status: 201, body: `{"id":"c"}`})
	ids, err := c.PushBatch(ctx, []Job{{ID: "a", Topic: "t"}, {ID: "b", Topic: "t"}, {ID: "c", Topic: "t"}})
	if err != nil || !slices.Equal(ids, []string{"a", "b", "c"}) {
		t.Fatalf("with ids: %v %v", ids, err)
	}
	if want := []string{"/api/v1/jobs/batch", "/api/v1/jobs", "/api/v1/jobs"}; !slices.Equal(f.paths(), want) {
		t.Fatalf("sent %v, want %v", f.paths(), want)
	}
	// A unique job carried on alone that replaced a waiting job: that job's id.
	c, _ = serve(t, Options{}, partly, answer{status: 200, body: `{"id":"held","internal_id":3,"unique":"replaced"}`})
	ids, err = c.PushBatch(ctx, []Job{{ID: "a", Topic: "t"}, {ID: "b", Topic: "t", Unique: &Unique{Key: "k", For: time.Minute, Mode: UniqueReplace}}})
	if err != nil || !slices.Equal(ids, []string{"a", "held"}) {
		t.Fatalf("a unique job that replaced another: %v %v", ids, err)
	}
	c, f = serve(t, Options{}, partly)
	ids, err = c.PushBatch(ctx, []Job{{Topic: "t"}, {Topic: "t"}})
	if !IsUnavailable(err) || !slices.Equal(ids, []string{"a"}) || len(f.paths()) != 1 {
		t.Fatalf("without ids: %v %v after %d tries; want the 503, the stored ids, no retry", ids, err, len(f.paths()))
	}
}

// An ack that went through before its pop failed is not sent again: only
// the pop is; an ack whose retry finds the job gone was acked.
func TestAckThenPopRetries(t *testing.T) {
	ctx := context.Background()
	c, f := serve(t, Options{}, answer{status: 503, body: `{"error":"busy","acked":"j1"}`},
		answer{status: 200, body: `{"id":"j2","topic":"t","attempt":1}`})
	j, err := c.AckAndPop(ctx, "j1", 1, []string{"t"}, time.Second)
	if err != nil || j == nil || j.ID != "j2" || !slices.Equal(f.paths(), []string{"/api/v1/jobs/j1/ack", "/api/v1/pop"}) {
		t.Fatalf("ack then pop: %+v %v, sent %v", j, err, f.paths())
	}
	c, _ = serve(t, Options{}, unavailable, answer{status: 404, body: `{"error":"no such job"}`})
	if err := c.Ack(ctx, "j1", 1); err != nil {
		t.Fatalf("ack found gone by its retry: %v", err)
	}
	c, _ = serve(t, Options{}, answer{status: 404, body: `{"error":"no such job"}`})
	if err := c.Ack(ctx, "j1", 1); !IsNotFound(err) {
		t.Fatalf("ack of an unknown job: %v", err)
	}
}

// A batch ack sends again only the acks answered 503 (with the pop still
// wanted), and takes a 404 to them as acked; a failed pop after all the acks
// went through is sent again alone.
func TestAckManyRetries(t *testing.T) {
	ctx := context.Background()
	jobs := []Job{{ID: "a", Attempt: 1}, {ID: "b", Attempt: 1}, {ID: "c", Attempt: 1}}
	c, f := serve(t, Options{},
		answer{status: 503, body: `{"error":"busy","acked":["a"],"failed":[{"id":"b","status":503,"error":"busy"},{"id":"c","status":409,"error":"stale"}]}`},
		answer{status: 200, body: `{"acked":[],"failed":[{"id":"b","status":404,"error":"gone"}],"jobs":[{"id":"d","topic":"t"}]}`})
	out, err := c.AckMany(ctx, jobs, []string{"t"}, 5, time.Second)
	if err != nil || !slices.Equal(out.IDs, []string{"a", "b"}) || len(out.Failed) != 1 || out.Failed[0].ID != "c" ||
		len(out.Next) != 1 || out.Next[0].ID != "d" {
		t.Fatalf("%+v %v", out, err)
	}
	if retry := f.got[1].body; !strings.Contains(retry, `"b"`) || strings.Contains(retry, `"a"`) || !strings.Contains(retry, "next") {
		t.Fatalf("the retry sent %s; want b's ack alone, with the pop", retry)
	}

	c, f = serve(t, Options{}, answer{status: 503, body: `{"error":"busy","acked":["a","b","c"],"failed":[]}`},
		answer{status: 200, body: `{"jobs":[{"id":"d","topic":"t"}]}`})
	out, err = c.AckMany(ctx, jobs, []string{"t"}, 5, time.Second)
	if err != nil || len(out.IDs) != 3 || len(out.Next) != 1 || !slices.Equal(f.paths(), []string{"/api/v1/ack", "/api/v1/pop"}) {
		t.Fatalf("acks done, pop failed: %+v %v, sent %v", out, err, f.paths())
	}

	c, f = serve(t, Options{Retries: 1}, unavailable)
	out, err = c.AckMany(ctx, jobs[:1], nil, 0, 0)
	if err == nil || len(out.IDs) != 0 || len(out.Failed) != 1 || out.Failed[0].Status != 503 || len(f.paths()) != 2 {
		t.Fatalf("Redis down throughout: %+v %v after %d tries", out, err, len(f.paths()))
	}
}

// Each request may take its wait plus the client's timeout, whatever the
// http.Client's own Timeout; a request that waits for nothing, the timeout.
// Each margin is a second (was 100 ms), which a loaded machine's scheduling
// does not overtake.
func TestTimeoutsOutlastTheWait(t *testing.T) {
	const timeout, wait = 2 * time.Second, time.Second
	slow := answer{status: 204, delay: wait + timeout/2}
	ctx := context.Background()
	c, _ := serve(t, Options{HTTPClient: &http.Client{Timeout: timeout}}, slow)
	if j, err := c.Pop(ctx, []string{"t"}, wait); err != nil || j != nil {
		t.Fatalf("a pop answered within its wait plus the timeout: %+v %v", j, err)
	}
	c, _ = serve(t, Options{Timeout: timeout}, answer{status: 200, delay: timeout * 2})
	start := time.Now()
	err := c.Touch(ctx, "j1", 1)
	if err == nil || time.Since(start) > timeout*3/2 {
		t.Fatalf("a touch slower than the timeout: %v after %v", err, time.Since(start))
	}
}

func TestToken(t *testing.T) {
	for token, want := range map[string]string{"": "", "s3cret": "Bearer s3cret"} {
		c, f := serve(t, Options{Token: token}, answer{status: 204})
		if _, err := c.Pop(context.Background(), []string{"t"}, 0); err != nil {
			t.Fatal(err)
		}
		if got := f.got[0].auth; got != want {
			t.Errorf("token %q: Authorization %q, want %q", token, got, want)
		}
	}
}

func TestReason(t *testing.T) {
	long := "a" + strings.Repeat("é", maxReason) // two bytes each: the cut falls inside one
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errors.New("smtp: 550"), "smtp: 550"},
		{errors.New(""), "*errors.errorString with no message"},
		{errors.New(long), long[:maxReason-1] + "…"},
	} {
		if got := reason(tc.err); got != tc.want {
			t.Errorf("reason(%.20q): %.40q, want %.40q", tc.err, got, tc.want)
		}
	}
}
