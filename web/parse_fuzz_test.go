package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/internal/jobjson"
	"github.com/gmq/gmq/job"
)

// The parsers must never panic, and must either accept a request whose
// values are in range or reject it as a bad request.

func FuzzParsePush(f *testing.F) {
	for _, s := range []string{
		`{"id":"a_1","topic":"t","body":"x","delay":"1800","TTR":"30","priority":5}`,
		`{"topic":"t","body":"x","ttr":0.5}`, `{"topic":"t"}`, `[]`, `{`, `null`, `{"delay":1e400}`,
		`{"topic":"t","body":{"to":"a", "n": [1, 2.5e3, {"x":null}]}}`, `{"topic":"t","body":[ ]}`,
		`{"topic":"t","body":"{\"to\":\"a\"}"}`, `{"topic":"t","body":7}`, `{"topic":"t","body":null}`,
		`{"topic":"t","body":{"s":"\ud800"}}`, `{"topic":"t","body":"\udc00"}`, `{"topic":"t","body":[1e400]}`,
		`{"topic":"t","body":{"s":"\ud83d\ude00","n":9007199254740993}}`,
	} {
		f.Add([]byte(s))
	}
	def := jobDefaults{TTR: time.Minute, Priority: 1024}
	f.Fuzz(func(t *testing.T, data []byte) {
		j, err := parsePush(data, def)
		if err != nil {
			if !errors.Is(err, errBadRequest) {
				t.Fatalf("error %v is not a bad request", err)
			}
			return
		}
		if j.Delay < 0 || j.TTR < 0 || j.Delay > maxSeconds*time.Second || j.TTR > maxSeconds*time.Second {
			t.Fatalf("accepted out-of-range durations: %+v", j)
		}
		checkBody(t, j.Body, j.BodyJSON)
	})
}

// checkBody fails unless a body read as JSON is a compact object or array
// (what the line protocols' consumers get as bytes) that every client reads
// back as it is (jobjson.Check), and any other is UTF-8.
func checkBody(t *testing.T, body string, asJSON bool) {
	t.Helper()
	if !utf8.ValidString(body) {
		t.Fatalf("accepted a body that is not UTF-8: %q", body)
	}
	if !asJSON {
		return
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(body)); err != nil || compact.String() != body || (body[0] != '{' && body[0] != '[') {
		t.Fatalf("a JSON body that is not a compact object or array: %q (%v)", body, err)
	}
	if err := jobjson.Check([]byte(body)); err != nil {
		t.Fatalf("a JSON body some client cannot read back: %q (%v)", body, err)
	}
}

func FuzzParsePop(f *testing.F) {
	for _, s := range []string{`{"topics":["a","b"],"timeout":5}`, `{"topic":"a"}`, `{"topics":[1]}`, `{}`, `{"topic":"a","count":"3"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := parsePop(data)
		if err != nil {
			if !errors.Is(err, errBadRequest) {
				t.Fatalf("error %v is not a bad request", err)
			}
			return
		}
		if len(req.Topics) == 0 || req.Timeout < 0 || req.Count < 0 {
			t.Fatalf("accepted %+v", req)
		}
	})
}

func FuzzParseAcks(f *testing.F) {
	for _, s := range []string{
		`{"jobs":[{"id":"a-1","attempt":2},{"id":17}]}`, `{"jobs":[{"id":"x"}],"next":{"topic":"t","count":5,"timeout":1}}`,
		`{"jobs":[]}`, `{"jobs":[{"id":""}]}`, `{"jobs":[{"id":1.5}]}`, `{"jobs":{}}`,
		`{"jobs":[{"id":"a-1","token":"228769930762696001.2"}]}`, `{"jobs":[{"id":"a-1","token":"1.0"}]}`,
		`{"jobs":[{"id":"a-1","push":[{"topic":"t","body":"x","delay":5}]}]}`, `{"jobs":[{"id":"a-1","push":[]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		acks, pushes, next, err := parseAcks(data, 10, jobDefaults{})
		if err != nil {
			if !errors.Is(err, errBadRequest) {
				t.Fatalf("error %v is not a bad request", err)
			}
			return
		}
		if len(acks) == 0 || len(acks) > 10 {
			t.Fatalf("accepted %d acks", len(acks))
		}
		for i, a := range acks {
			if a.ID == "" || a.Attempt < 0 || !a.Token.IsZero() && (a.Token.ID == 0 || a.Token.Attempt < 1) {
				t.Fatalf("accepted %+v", a)
			}
			if p := pushes[i]; p != nil && (len(p) == 0 || len(p) > dispatcher.MaxFollowUps || p[0].Topic == "") {
				t.Fatalf("accepted follow-ups %+v", p)
			}
		}
		if next != nil && (len(next.Topics) == 0 || next.Count < 0) {
			t.Fatalf("accepted next %+v", next)
		}
	})
}

func FuzzParseJobCall(f *testing.F) {
	for _, s := range []string{``, `{"attempt":2}`, `{"priority":"7","delay":"1.5"}`, `{"attempt":-1}`,
		`{"token":"228769930762696001.2","attempt":2}`, `{"token":"17.0"}`, `{"token":17}`,
		`{"push":[{"topic":"t","body":{"a":1}}],"result":7}`, `{"push":[{"topic":"t","body":"x"}],"next":{"topic":"t"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for action := range jobCallFields {
			c, err := parseJobCall(data, action, jobDefaults{})
			if err != nil {
				if !errors.Is(err, errBadRequest) {
					t.Fatalf("%s: error %v is not a bad request", action, err)
				}
				continue
			}
			if c.Attempt < 0 || c.Delay < 0 || !c.Token.IsZero() && (c.Token.ID == 0 || c.Token.Attempt < 1) || (c.Priority < 0 && c.Priority != job.KeepPriority) || c.Priority > maxSeconds ||
				c.Push != nil && (action != "ack" || len(c.Push) == 0 || len(c.Push) > dispatcher.MaxFollowUps || c.Next != nil) {
				t.Fatalf("%s: accepted %+v", action, c)
			}
		}
	})
}

// A PATCH's change of a waiting job: refused as a bad request, or within
// every bound.
func FuzzParseUpdate(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"delay":0,"priority":1,"body":"x"}`, `{"pri":"7","delay":"1e3"}`, `{"body":null}`, `{"delay":-1}`,
		`{"body":{"a": [1, "b"]}}`, `{"body":"[1]"}`, `{"body":false}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		u, err := parseUpdate(data)
		if err != nil {
			if !errors.Is(err, errBadRequest) {
				t.Fatalf("error %v is not a bad request", err)
			}
			return
		}
		if u.Delay != nil && (*u.Delay < 0 || *u.Delay > maxSeconds*time.Second) {
			t.Fatalf("accepted a delay of %v", *u.Delay)
		}
		if u.Body != nil {
			checkBody(t, *u.Body, u.BodyJSON)
		} else if u.BodyJSON {
			t.Fatalf("BodyJSON without a body: %+v", u)
		}
	})
}

func FuzzParsePage(f *testing.F) {
	for _, s := range [][2]string{{"", ""}, {"0", "50"}, {"100000000000000000", "1"}, {"1e17", ""}, {"-1", "0"},
		{"9223372036854775807", "9223372036854775807"}, {"99999999999999999999", "x"}, {"+5", " 3"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, offset, limit string) {
		p, err := parsePage(offset, limit, 50, 500)
		if err != nil {
			if !errors.Is(err, errBadRequest) {
				t.Fatalf("error %v is not a bad request", err)
			}
			return
		}
		if p.offset < 0 || p.limit < 1 || p.limit > 500 {
			t.Fatalf("parsePage(%q, %q) = %+v", offset, limit, p)
		}
	})
}
