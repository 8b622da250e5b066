package gmqrpc

import (
	"encoding/json"
	"testing"
	"time"
)

// FuzzParseJob feeds Service.Push's parser any JSON object: it must never
// panic, and what it accepts must be in range.
func FuzzParseJob(f *testing.F) {
	for _, s := range []string{
		`{"id":"a_1","topic":"t","body":"x","delay":"1800","TTR":"30"}`, `{"topic":"t","TTR":1.5,"priority":"7"}`,
		`{"topic":1}`, `{"delay":"NaN","topic":"t"}`, `{"topic":"t","priority":4294967296}`,
	} {
		f.Add([]byte(s))
	}
	s := &Service{opts: Options{DefaultTTR: time.Minute, DefaultPriority: 1024}}
	f.Fuzz(func(t *testing.T, data []byte) {
		var args map[string]any
		if json.Unmarshal(data, &args) != nil {
			return
		}
		j, err := s.parseJob(args)
		if err != nil {
			return
		}
		if j.Topic == "" || j.Delay < 0 || j.TTR < 0 || j.Delay > (1<<32)*time.Second || j.TTR > (1<<32)*time.Second {
			t.Fatalf("accepted %+v from %s", j, data)
		}
	})
}
