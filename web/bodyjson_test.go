package web_test

import (
	"bufio"
	"fmt"
	"net"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/beanstalkd/go-beanstalk"
)

// bodies are the ways a body may be pushed, and how the API shows each:
// an object or an array as that JSON, a string as a string, even one whose
// text is JSON.
var bodies = []struct {
	name, body string
	want       any // as encoding/json decodes the API's answer
	stored     string
}{
	{"an object", `{"to":"a","n":[1,2.5]}`, map[string]any{"to": "a", "n": []any{1.0, 2.5}}, `{"to":"a","n":[1,2.5]}`},
	{"an object with spaces", "{ \"to\" : \"a\",\n\t\"tags\" : [ ] }", map[string]any{"to": "a", "tags": []any{}}, `{"to":"a","tags":[]}`},
	{"an empty object", `{}`, map[string]any{}, `{}`},
	{"an array", `[1, "two", {"three": null}]`, []any{1.0, "two", map[string]any{"three": nil}}, `[1,"two",{"three":null}]`},
	{"a string holding an object", `"{\"to\":\"a\"}"`, `{"to":"a"}`, `{"to":"a"}`},
	{"a string holding an array", `"[1,2]"`, "[1,2]", "[1,2]"},
	{"a string", `"hello"`, "hello", "hello"},
}

// Every view of a job shows its body as it was pushed: push, GET, peek,
// the topic's list, pop, a batch pop and the dead list.
func TestJSONBodies(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	for i, tt := range bodies {
		t.Run(tt.name, func(t *testing.T) {
			topic := fmt.Sprintf("json-%d", i)
			pushed := mustCall(t, 201, "POST", api+"/jobs",
				`{"topic":"`+topic+`","body":`+tt.body+`,"TTR":30,"retry":{"max_attempts":1}}`)
			id := fmt.Sprint(pushed["id"])
			views := map[string]any{
				"GET":  mustCall(t, 200, "GET", api+"/jobs/"+id, ``)["body"],
				"peek": mustCall(t, 200, "GET", api+"/topics/"+topic+"/peek/ready", ``)["body"],
				"list": mustCall(t, 200, "GET", api+"/topics/"+topic+"/jobs", ``)["jobs"].([]any)[0].(map[string]any)["body"],
				"pop":  mustCall(t, 200, "POST", api+"/pop", `{"topic":"`+topic+`"}`)["body"],
			}
			mustCall(t, 200, "POST", api+"/jobs/"+id+"/fail", `{"attempt":1,"error":"boom"}`) // to the dead set
			dead := mustCall(t, 200, "GET", api+"/topics/"+topic+"/dead", ``)["jobs"].([]any)
			views["dead list"] = dead[0].(map[string]any)["body_preview"]
			mustCall(t, 200, "POST", api+"/topics/"+topic+"/dead/retry", ``)
			views["retried, popped"] = mustCall(t, 200, "POST", api+"/pop", `{"topic":"`+topic+`"}`)["body"]
			for view, got := range views {
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("%s shows the body as %#v, want %#v", view, got, tt.want)
				}
			}
			if st := mustCall(t, 200, "GET", api+"/topics/"+topic, ``); st["bytes"] != float64(len(tt.stored)) {
				t.Errorf("the topic holds %v bytes, want the stored text's %d", st["bytes"], len(tt.stored))
			}
		})
	}

	// A batch push, and a batch pop, in push order.
	items := make([]string, len(bodies))
	for i, tt := range bodies {
		items[i] = `{"topic":"json-batch","body":` + tt.body + `}`
	}
	mustCall(t, 201, "POST", api+"/jobs/batch", `{"jobs":[`+strings.Join(items, ",")+`]}`)
	popped := mustCall(t, 200, "POST", api+"/pop", fmt.Sprintf(`{"topic":"json-batch","count":%d}`, len(bodies)))["jobs"].([]any)
	if len(popped) != len(bodies) {
		t.Fatalf("a batch pop took %d jobs, want %d", len(popped), len(bodies))
	}
	for i, tt := range bodies {
		if got := popped[i].(map[string]any)["body"]; !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: a batch pop shows %#v, want %#v", tt.name, got, tt.want)
		}
	}
}

// A list shows the first 200 bytes of each body: a JSON body cut short is
// no JSON, and shows as a string.
func TestJSONBodyPreview(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	long := `{"text":"` + strings.Repeat("x", 300) + `"}`
	mustCall(t, 201, "POST", api+"/jobs", `{"topic":"p","body":`+long+`}`)
	got := mustCall(t, 200, "GET", api+"/topics/p/jobs", ``)["jobs"].([]any)[0].(map[string]any)["body"]
	if got != long[:200] {
		t.Fatalf("the preview of a long JSON body: %#v, want its first 200 bytes as a string", got)
	}
	if got := mustCall(t, 200, "GET", api+"/pop?topic=p", ``)["body"]; !reflect.DeepEqual(got, map[string]any{"text": strings.Repeat("x", 300)}) {
		t.Fatalf("the popped body: %#v", got)
	}
}

// A body that is a number, true, false or null is refused wherever a body
// is read, saying what a body may be; the size limits count the stored
// (compact) text, not the bytes sent.
func TestJSONBodyRefused(t *testing.T) {
	b := broker(t) // max_body 1024
	api := b.URL + "/api/v1"
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"waiting","topic":"t","body":"x","delay":3600}`)
	const says = "body must be a string, an object or an array"
	padded := `{"k":` + strings.Repeat(" ", 2000) + `"` + strings.Repeat("v", 1000) + `"}` // compact: 1008 bytes
	tests := []struct {
		name, method, path, body string
		want                     int
		says                     string
	}{
		{"a number", "POST", "/jobs", `{"topic":"t","body":42}`, 400, says + ", got 42"},
		{"true", "POST", "/jobs", `{"topic":"t","body":true}`, 400, says + ", got true"},
		{"false", "POST", "/jobs", `{"topic":"t","body":false}`, 400, says + ", got false"},
		{"null", "POST", "/jobs", `{"topic":"t","body":null}`, 400, says + ", got null"},
		{"a number in a batch", "POST", "/jobs/batch", `{"jobs":[{"topic":"t","body":"x"},{"topic":"t","body":1.5}]}`, 400, "job 1: bad request: " + says},
		{"a number in a PATCH", "PATCH", "/jobs/waiting", `{"body":7}`, 400, says},
		{"null in a PATCH", "PATCH", "/jobs/waiting", `{"body":null}`, 400, says},
		{"a number in a schedule's job", "PUT", "/schedules/s", `{"cron":"0 0 * * *","job":{"topic":"t","body":0}}`, 400, says},
		{"an object over max_body", "POST", "/jobs", `{"topic":"t","body":{"k":"` + strings.Repeat("v", 1020) + `"}}`, 413, "1028 bytes, the limit is 1024"},
		{"an object within max_body once compact", "POST", "/jobs", `{"topic":"t","body":` + padded + `}`, 201, ""},
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
	if st := mustCall(t, 200, "GET", api+"/topics/t", ``); st["total_jobs"] != 2.0 || st["bytes"] != float64(1+1008) {
		t.Fatalf("the topic: %v jobs, %v bytes; want 2 jobs of 1 and 1008 bytes", st["total_jobs"], st["bytes"])
	}

	// A topic's max_item_size counts the compact text too.
	mustCall(t, 200, "PUT", api+"/topics/small/config", `{"max_item_size":11}`)
	mustCall(t, 201, "POST", api+"/jobs", `{"topic":"small","body":{ "a" : "123" }}`) // {"a":"123"}: 11 bytes
	mustCall(t, 413, "POST", api+"/jobs", `{"topic":"small","body":{"a":"1234"}}`)
}

// PATCH sets a waiting job's body as it is given: an object or an array
// shows as JSON from then on, a string as a string.
func TestJSONBodyPatch(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"draft","topic":"patched","body":"first","delay":3600}`)
	for _, tt := range bodies {
		t.Run(tt.name, func(t *testing.T) {
			changed := mustCall(t, 200, "PATCH", api+"/jobs/draft", `{"body":`+tt.body+`}`)
			got := mustCall(t, 200, "GET", api+"/jobs/draft", ``)
			if !reflect.DeepEqual(changed["body"], tt.want) || !reflect.DeepEqual(got["body"], tt.want) {
				t.Fatalf("after a PATCH of %s: answered %#v, then shown %#v; want %#v", tt.body, changed["body"], got["body"], tt.want)
			}
		})
	}
	// A change of the delay alone keeps the body as it is.
	mustCall(t, 200, "PATCH", api+"/jobs/draft", `{"body":{"final":true}}`)
	if got := mustCall(t, 200, "PATCH", api+"/jobs/draft", `{"delay":0}`); !reflect.DeepEqual(got["body"], map[string]any{"final": true}) {
		t.Fatalf("after a change of the delay: %#v", got["body"])
	}
}

// A schedule's job may have an object body: shown as one, and each fire's
// job carries it.
func TestJSONBodySchedule(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	sc := mustCall(t, 200, "PUT", api+"/schedules/report", `{"cron":"0 0 1 1 *","job":{"topic":"reports","body":{"kind":"yearly"}}}`)
	want := map[string]any{"kind": "yearly"}
	if got := sc["job"].(map[string]any)["body"]; !reflect.DeepEqual(got, want) {
		t.Fatalf("the schedule's job body: %#v, want %#v", got, want)
	}
	mustCall(t, 201, "POST", api+"/schedules/report/fire", ``)
	if got := mustCall(t, 200, "GET", api+"/pop?topic=reports", ``)["body"]; !reflect.DeepEqual(got, want) {
		t.Fatalf("the fired job's body: %#v, want %#v", got, want)
	}
}

// The line protocols have no JSON: a body pushed as JSON reaches their
// consumers as the stored bytes, its compact text.
func TestJSONBodyOverLineProtocols(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	const sent, compact = "{ \"to\" : \"a\", \"n\" : [ 1, 2 ] }", `{"to":"a","n":[1,2]}`
	mustCall(t, 201, "POST", api+"/jobs", `{"topic":"bs","body":`+sent+`,"TTR":30}`)
	mustCall(t, 201, "POST", api+"/jobs", `{"topic":"ks","body":`+sent+`,"TTR":30}`)

	conn, err := beanstalk.Dial("tcp", b.BeanstalkAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, body, err := beanstalk.NewTubeSet(conn, "bs").Reserve(5 * time.Second); err != nil || string(body) != compact {
		t.Fatalf("beanstalkd reserve: %q %v, want %q", body, err, compact)
	}

	kc, err := net.DialTimeout("tcp", b.KestrelAddr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	_ = kc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(kc, "get ks\r\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(kc)
	head, _ := r.ReadString('\n')
	body, _ := r.ReadString('\n')
	if head != fmt.Sprintf("VALUE ks 0 %d\r\n", len(compact)) || body != compact+"\r\n" {
		t.Fatalf("kestrel get: %q %q, want %q", head, body, compact)
	}

	// And a body a line protocol pushed is a string to the JSON API, even
	// when its bytes are JSON.
	id, err := (&beanstalk.Tube{Conn: conn, Name: "from-bs"}).Put([]byte(compact), 1, 0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustCall(t, 200, "GET", api+"/jobs/"+url.PathEscape(fmt.Sprint(id)), ``)["body"]; got != compact {
		t.Fatalf("a beanstalkd job over HTTP: %#v, want the string %q", got, compact)
	}
}
