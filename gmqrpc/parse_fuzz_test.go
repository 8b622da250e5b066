package gmqrpc

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/gmq/gmq/internal/jobjson"
)

// FuzzParseJob feeds Service.Push's arguments, decoded as net/rpc decodes
// them (through JobArgs), to the job parser: it must never panic, and what it
// accepts must be in range. (Topic names are the dispatcher's to check: TestGoClient shows
// an empty one refused.)
func FuzzParseJob(f *testing.F) {
	for _, s := range []string{
		`{"id":"a_1","topic":"t","body":"x","delay":"1800","TTR":"30"}`, `{"topic":"t","body":"","TTR":1.5,"priority":"7"}`,
		`{"topic":1}`, `{"delay":"NaN","topic":"t"}`, `{"topic":"t","priority":4294967296}`,
		`{"topic":"a","Topic":"b","body":""}`, `{"topic":"t","body":"","delay":"0x1p4"}`,
	} {
		f.Add([]byte(s))
	}
	def := jobjson.Defaults{TTR: time.Minute, Priority: 1024}
	f.Fuzz(func(t *testing.T, data []byte) {
		var args JobArgs
		if json.Unmarshal(data, &args) != nil || args.err != nil {
			return
		}
		j, err := jobjson.Job(args.fields, def)
		if err != nil {
			return
		}
		if j.Delay < 0 || j.TTR < 0 || j.Delay > (1<<32)*time.Second || j.TTR > (1<<32)*time.Second {
			t.Fatalf("accepted %+v from %s", j, data)
		}
	})
}
