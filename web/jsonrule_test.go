package web_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/beanstalkd/go-beanstalk"
)

// Every JSON value the broker keeps must read back as it was sent in every
// client (issue 49): a lone surrogate, bytes that are not UTF-8 or a number
// past a double is refused with 400 naming its path, wherever a request
// carries it, and the request changes nothing. (A lone surrogate was
// accepted, and PHP's client then threw on every pop of the job; a string
// "\ud800" was stored as U+FFFD; 1e400 was kept in bodies and results.)
func TestJSONReadersCannotTakeBackRefused(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"waiting","topic":"rule","body":"x","delay":3600}`)
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"held","topic":"rule-held","body":"x","TTR":600}`)
	held := mustCall(t, 200, "POST", api+"/pop", `{"topic":"rule-held"}`)
	token := fmt.Sprint(held["token"])
	tests := []struct {
		name, method, path, body string
		says                     string
	}{
		{"a body's lone surrogate", "POST", "/jobs", `{"topic":"rule","body":{"s":"\ud800"}}`, `body.s: lone surrogate \ud800`},
		{"a string body's lone surrogate", "POST", "/jobs", `{"topic":"rule","body":"\ud800"}`, `body: lone surrogate \ud800`},
		{"a lone low surrogate", "POST", "/jobs", `{"topic":"rule","body":["ok","\udc00"]}`, `body[1]: lone surrogate \udc00`},
		{"a body's 1e400", "POST", "/jobs", `{"topic":"rule","body":{"n":1e400}}`, `body.n: number 1e400 out of range`},
		{"a body's -1e400", "POST", "/jobs", `{"topic":"rule","body":[-1e400]}`, `body[0]: number -1e400 out of range`},
		{"a body's bytes not UTF-8", "POST", "/jobs", "{\"topic\":\"rule\",\"body\":{\"s\":\"\xff\"}}", `body.s: not valid UTF-8`},
		{"a batch push", "POST", "/jobs/batch", `{"jobs":[{"topic":"rule","body":"x"},{"topic":"rule","body":{"a":"\ud800"}}]}`, `jobs[1].body.a: lone surrogate`},
		{"a follow-up's body", "POST", "/jobs", `{"topic":"rule","body":"x","then":[{"topic":"rule","body":"\ud800"}]}`, `then[0].body: lone surrogate`},
		{"a PATCH", "PATCH", "/jobs/waiting", `{"body":{"s":"\ud800"}}`, `body.s: lone surrogate`},
		{"a schedule's job", "PUT", "/schedules/rule", `{"cron":"0 0 * * *","job":{"topic":"rule","body":{"n":1e400}}}`, `job.body.n: number 1e400 out of range`},
		{"a batch's meta, a lone surrogate", "POST", "/batches", `{"jobs":[{"topic":"rule","body":"x"}],"meta":{"s":"\ud800"}}`, `meta.s: lone surrogate`},
		{"a batch's meta, 1e400", "POST", "/batches", `{"jobs":[{"topic":"rule","body":"x"}],"meta":{"n":1e400}}`, `meta.n: number 1e400 out of range`},
		{"an ack's result, 1e400", "POST", "/jobs/held/ack", `{"token":"` + token + `","result":{"items":[1,2,3,1e400]}}`, `result.items[3]: number 1e400 out of range`},
		{"an ack's result, a lone surrogate", "POST", "/jobs/held/ack", `{"token":"` + token + `","result":"\ud800"}`, `result: lone surrogate`},
		{"an ack's follow-up", "POST", "/jobs/held/ack", `{"token":"` + token + `","push":[{"topic":"rule","body":{"s":"\ud800"}}]}`, `push[0].body.s: lone surrogate`},
		{"a batch ack's result", "POST", "/ack", `{"jobs":[{"id":"held","token":"` + token + `","result":[1e400]}]}`, `jobs[0].result[0]: number 1e400 out of range`},
		{"a fail's error", "POST", "/jobs/held/fail", `{"token":"` + token + `","error":"bad \ud800"}`, `error: lone surrogate`},
		{"a batch fail's error", "POST", "/fail", `{"jobs":[{"id":"held","token":"` + token + `","error":"\udfff"}]}`, `jobs[0].error: lone surrogate`},
		{"a progress", "POST", "/jobs/held/progress", `{"token":"` + token + `","progress":{"done":1e400}}`, `progress.done: number 1e400 out of range`},
		{"a progress's log", "POST", "/jobs/held/progress", `{"token":"` + token + `","log":"\ud800"}`, `log: lone surrogate`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := call(t, tt.method, api+tt.path, tt.body)
			msg, _ := out["error"].(string)
			if code != 400 || !strings.Contains(msg, tt.says) {
				t.Fatalf("%s %s %s: %d %q, want 400 saying %q", tt.method, tt.path, tt.body, code, msg, tt.says)
			}
		})
	}
	// Nothing was stored or changed: the waiting job and the held one are as they were.
	if st := mustCall(t, 200, "GET", api+"/topics/rule", ``); st["total_jobs"] != 1.0 {
		t.Errorf("the topic took %v jobs, want only the first", st["total_jobs"])
	}
	if j := mustCall(t, 200, "GET", api+"/jobs/waiting", ``); j["body"] != "x" {
		t.Errorf("the waiting job's body: %#v", j["body"])
	}
	if j := mustCall(t, 200, "GET", api+"/jobs/held", ``); j["state"] != "reserved" || j["failures"] != 0.0 {
		t.Errorf("the held job: %v", j)
	}
	if code, _ := call(t, "GET", api+"/schedules/rule", ``); code != 404 {
		t.Errorf("the schedule: %d, want 404 (never made)", code)
	}

	// What every decoder reads back is kept as sent: a surrogate pair, the
	// largest double, a whole number past 2^53 (JavaScript reads it to the
	// nearest double, but fails on none).
	const body = `{"e":"\ud83d\ude00","max":1.7976931348623157e308,"big":9007199254740993}`
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"kept","topic":"rule-kept","body":`+body+`}`)
	resp, err := http.Get(api + "/jobs/kept")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 || !strings.Contains(string(raw), `"body":`+body) {
		t.Errorf("the kept job: %d %s %v, want its body as sent", resp.StatusCode, raw, err)
	}
}

// The line protocols (beanstalkd, kestrel's memcache, text and thrift) carry
// bodies as bytes, not JSON: gmq keeps them byte for byte and refuses none,
// and the rule is kept where they meet JSON, in the encoding. The JSON views
// show such a body as a JSON string written by Go's encoder, which every
// client reads: text that spells a lone surrogate's escape stays that text,
// and bytes that are not UTF-8 show as U+FFFD there (docs/protocols.md: pop
// them over a line protocol), while the line protocols give back the bytes.
func TestLineProtocolBodiesStayBytes(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	conn, err := beanstalk.Dial("tcp", b.BeanstalkAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, tt := range []struct{ name, bytes, shown string }{
		{"the text of a lone surrogate's escape", `{"s":"\ud800"}`, `{"s":"\ud800"}`},
		{"the text of a number past a double", `[1e400]`, `[1e400]`},
		{"bytes that are not UTF-8", "a\xffb", "a\ufffdb"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tube := &beanstalk.Tube{Conn: conn, Name: "bytes"}
			id, err := tube.Put([]byte(tt.bytes), 1, 0, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if got := mustCall(t, 200, "GET", api+"/jobs/"+url.PathEscape(fmt.Sprint(id)), ``)["body"]; got != tt.shown {
				t.Errorf("over HTTP: %#v, want the string %q", got, tt.shown)
			}
			gotID, body, err := beanstalk.NewTubeSet(conn, "bytes").Reserve(5 * time.Second)
			if err != nil || gotID != id || string(body) != tt.bytes {
				t.Fatalf("reserved %d %q %v, want %d %q", gotID, body, err, id, tt.bytes)
			}
			if err := conn.Delete(id); err != nil {
				t.Fatal(err)
			}
		})
	}
}
