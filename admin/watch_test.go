package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gmq/gmq/admin"
	"github.com/gmq/gmq/broker/brokertest"
)

// syncBuffer is what a command running in the background writes, read by
// the test meanwhile.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor waits until buf holds want, within 10 s.
func waitFor(t *testing.T, buf *syncBuffer, want string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(buf.String(), want); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %q; got:\n%s", want, buf.String())
		}
	}
}

// startWatch runs gmq watch args against base in the background, once its
// stream is in place (it says so on stderr); stop ends it, as SIGINT
// would, and returns its exit code.
func startWatch(t *testing.T, base string, args ...string) (out, errOut *syncBuffer, stop func() int) {
	t.Helper()
	out, errOut = &syncBuffer{}, &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	go func() { code <- admin.RunContext(ctx, "watch", append(args, "--url", base), out, errOut) }()
	t.Cleanup(cancel)
	waitFor(t, errOut, "gmq watch: watching ")
	return out, errOut, func() int {
		cancel()
		select {
		case c := <-code:
			return c
		case <-time.After(10 * time.Second):
			t.Fatal("gmq watch did not end within 10 s of its interrupt")
		}
		return -1
	}
}

// eventRE is a line of gmq watch: time, type, topic, id, attempt, detail.
var eventRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (\S+ +\S+ \S+ attempt \d+.*)$`)

// watched reads gmq watch's lines without their times.
func watched(t *testing.T, out string) []string {
	t.Helper()
	var lines []string
	for line := range strings.Lines(out) {
		m := eventRE.FindStringSubmatch(strings.TrimSuffix(line, "\n"))
		if m == nil {
			t.Fatalf("gmq watch printed %q, not an event's line", line)
		}
		lines = append(lines, m[1])
	}
	return lines
}

// gmq watch prints a topic's events as a job is pushed, popped, reports
// its progress and is acked with a result (markup as itself); it warns of
// a topic that streams nothing, and ends with exit 0 when interrupted.
func TestAdminWatch(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	api := b.URL + "/api/v1"
	brokertest.MustCall(t, 200, "PUT", api+"/topics/mail/config", `{"events": true}`)
	out, errOut, stop := startWatch(t, b.URL, "mail", "quiet")
	if !strings.Contains(errOut.String(), "gmq watch: quiet streams nothing: its setting events is off") ||
		strings.Contains(errOut.String(), "mail streams nothing") || !strings.Contains(errOut.String(), "watching mail, quiet") {
		t.Errorf("gmq watch's stderr:\n%s", errOut)
	}
	brokertest.MustCall(t, 201, "POST", api+"/jobs", `{"topic":"quiet","body":"x"}`)
	brokertest.MustCall(t, 201, "POST", api+"/jobs", `{"id":"w-1","topic":"mail","body":"x"}`)
	j := brokertest.MustCall(t, 200, "GET", api+"/pop?topic=mail", "")
	brokertest.MustCall(t, 200, "POST", api+"/jobs/w-1/progress", fmt.Sprintf(`{"attempt":%v,"progress":{"page":2}}`, j["attempt"]))
	brokertest.MustCall(t, 200, "POST", api+"/jobs/w-1/ack", fmt.Sprintf(`{"attempt":%v,"result":{"html":"<b>done</b>"}}`, j["attempt"]))
	waitFor(t, out, " completed ")
	if code := stop(); code != 0 {
		t.Errorf("gmq watch interrupted: exit %d, want 0", code)
	}
	want := []string{
		`pushed    mail w-1 attempt 0`,
		`reserved  mail w-1 attempt 1 detail="[^"]+"`, // the broker that handed it out
		`progress  mail w-1 attempt 1 progress=\{"page":2\}`,
		`completed mail w-1 attempt 1 result=\{"html":"<b>done</b>"\}`,
	}
	got := watched(t, out.String())
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = regexp.MustCompile("^" + want[i] + "$").MatchString(got[i])
	}
	if !ok {
		t.Errorf("gmq watch printed\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// gmq watch --types takes only those types; --json prints each event's
// JSON on a line; an unknown type is the broker's 400 (exit 1).
func TestAdminWatchTypesJSON(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	api := b.URL + "/api/v1"
	brokertest.MustCall(t, 200, "PUT", api+"/topics/hooks/config", `{"events": true}`)
	out, _, stop := startWatch(t, b.URL, "hooks", "--types", "failed,dead", "--json")
	brokertest.MustCall(t, 201, "POST", api+"/jobs", `{"id":"h-1","topic":"hooks","body":"x"}`)
	j := brokertest.MustCall(t, 200, "GET", api+"/pop?topic=hooks", "")
	brokertest.MustCall(t, 200, "POST", api+"/jobs/h-1/fail", fmt.Sprintf(`{"attempt":%v,"error":"503 from\nthe hook"}`, j["attempt"]))
	waitFor(t, out, "\n")
	time.Sleep(100 * time.Millisecond) // a type not asked for would have come by now
	if code := stop(); code != 0 {
		t.Errorf("gmq watch --json interrupted: exit %d", code)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	var ev map[string]any
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &ev) != nil || ev["type"] != "failed" || ev["id"] != "h-1" ||
		ev["error"] != "503 from\nthe hook" || ev["topic"] != "hooks" {
		t.Fatalf("gmq watch --types failed,dead --json printed:\n%s", out)
	}

	code, stdout, stderr := gmq(b, "watch", "hooks", "--types", "exploded")
	if code != admin.ExitError || !strings.Contains(stderr, `gmq watch: 400: `) || !strings.Contains(stderr, `"exploded"`) || stdout != "" {
		t.Errorf("gmq watch --types exploded: exit %d %q %q", code, stdout, stderr)
	}
}

// A stream that drops is opened again from the last event seen: a job
// pushed while it was down is printed after, and nothing twice.
func TestAdminWatchReconnects(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	api := b.URL + "/api/v1"
	brokertest.MustCall(t, 200, "PUT", api+"/topics/mail/config", `{"events": true}`)
	target, err := url.Parse(b.URL)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var resumedFrom []string // each stream's Last-Event-ID
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/events" {
			mu.Lock()
			resumedFrom = append(resumedFrom, r.Header.Get("Last-Event-ID"))
			mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()

	out, errOut, stop := startWatch(t, front.URL, "mail")
	brokertest.MustCall(t, 201, "POST", api+"/jobs", `{"id":"r-1","topic":"mail","body":"x"}`)
	waitFor(t, out, "pushed    mail r-1")
	front.CloseClientConnections()
	brokertest.MustCall(t, 201, "POST", api+"/jobs", `{"id":"r-2","topic":"mail","body":"x"}`) // while it is down
	waitFor(t, out, "pushed    mail r-2")
	waitFor(t, errOut, "gmq watch: watching again")
	if code := stop(); code != 0 {
		t.Errorf("gmq watch interrupted: exit %d", code)
	}
	if got := watched(t, out.String()); strings.Join(got, "\n") != "pushed    mail r-1 attempt 0\npushed    mail r-2 attempt 0" {
		t.Errorf("gmq watch across a drop printed:\n%s", out)
	}
	t.Logf("gmq watch's stderr:\n%s", errOut)
	if !strings.Contains(errOut.String(), "opening the stream again in 1s, from the last event") {
		t.Errorf("gmq watch's stderr:\n%s", errOut)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(resumedFrom) != 2 || resumedFrom[0] != "" || resumedFrom[1] == "" {
		t.Errorf("the streams' Last-Event-IDs: %q, want none then the last event's", resumedFrom)
	}
}
