package jobjson

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// BenchmarkPushJob is the HTTP push's parse (web parsePush): Decode, then
// Job, of the body gmq bench and bench/HTTPPushVsBare send.
func BenchmarkPushJob(b *testing.B) {
	data := []byte(`{"topic":"bench","body":"` + strings.Repeat("x", 100) + `","TTR":60}`)
	def := Defaults{TTR: time.Minute}
	b.ReportAllocs()
	for b.Loop() {
		f, err := Decode(data)
		if err == nil {
			_, err = Job(f, def)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// Decode's answers to what is not one JSON object, as they were with a
// json.Decoder (and "]" after the object, which a decoder's More let pass).
func TestDecodeRefusals(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"topic":`, "malformed JSON"},
		{``, "malformed JSON"},
		{`[1,2]`, "want a JSON object"},
		{`"x"`, "want a JSON object"},
		{`null`, "want a JSON object"},
		{`[1] x`, "want a JSON object"},
		{`{"topic":"t"} {}`, "trailing data"},
		{`{"topic":"t"}]`, "trailing data"},
		{`{"a":1,"A":2}`, "given twice"},
	} {
		if _, err := Decode([]byte(tt.in)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Decode(%q): %v, want %q", tt.in, err, tt.want)
		}
	}
	// Names are matched without regard to case, and strings and numbers
	// read the fast way read as json.Unmarshal reads them.
	f, err := Decode([]byte(`{"Topic":"caf\u00e9","body":"a\"b","delay":"  90 ","ttr":60}`))
	if err != nil {
		t.Fatal(err)
	}
	if s, _, _ := f.Str("topic"); s != "café" {
		t.Errorf("topic %q", s)
	}
	if b, _, _, _ := f.Body(); b != `a"b` {
		t.Errorf("body %q", b)
	}
	if d, _, _ := f.Number("delay"); d != 90 {
		t.Errorf("delay %v", d)
	}
	if n, _, _ := f.Number("ttr"); n != 60 {
		t.Errorf("ttr %v", n)
	}
	// White space around names and values, and a flag read as its bytes.
	f, err = Decode([]byte("{\"topic\":\"t\",\"body\" : \"x\" ,\"with_result\" :\n  true  \n, \"TTR\" : \"60\" }"))
	if err != nil {
		t.Fatal(err)
	}
	if j, err := Job(f, Defaults{}); err != nil || !j.WithResult || j.Body != "x" || j.TTR != time.Minute {
		t.Errorf("%+v %v", j, err)
	}
	for _, bad := range []string{`1`, `"true"`, `[]`} {
		f, _ := Decode([]byte(`{"topic":"t","body":"x","with_results":` + bad + `}`))
		if _, err := Job(f, Defaults{}); err == nil || !strings.Contains(err.Error(), "with_results must be true or false") {
			t.Errorf("with_results %s: %v", bad, err)
		}
	}
}

// plainString reads what json.Unmarshal reads, wherever it says it can.
func FuzzPlainString(f *testing.F) {
	for _, s := range []string{`"x"`, `""`, `"caf` + "\xc3\xa9" + `"`, `"a\"b"`, `"\u00e9"`, "\"\xff\"", `"`, `x`, `"a"b"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := plainString(raw)
		if !ok {
			return
		}
		var want string
		if err := json.Unmarshal(raw, &want); err != nil || got != want {
			t.Fatalf("plainString(%q) = %q; json.Unmarshal: %q, %v", raw, got, want, err)
		}
	})
}
