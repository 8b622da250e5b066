package admin

import "testing"

// An event's line: its time to the millisecond (UTC), type, topic, id and
// attempt, then what it carries as JSON, markup as itself; a value cut at
// 1 KiB marked; control characters escaped, in any field.
func TestEventLine(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{`{"type":"completed","topic":"mail","id":"7","attempt":1,"at":"2026-05-01T10:12:05.1234567Z","result":{"b":1,"a":"\u003cb\u003e"}}`,
			`2026-05-01T10:12:05.123Z completed mail 7 attempt 1 result={"a":"<b>","b":1}`},
		{`{"type":"failed","topic":"mail","id":"7","attempt":2,"at":"2026-05-01T12:12:05+02:00","error":"smtp\u001b[2J 550"}`,
			`2026-05-01T10:12:05.000Z failed    mail 7 attempt 2 error="smtp\u001b[2J 550"`},
		{`{"type":"progress","topic":"t\u0007","id":"x\ny","attempt":1,"at":"2026-05-01T10:12:05Z","progress":"{\"rows\":[1,","cut":true}`,
			`2026-05-01T10:12:05.000Z progress  t\a x\ny attempt 1 progress="{\"rows\":[1," (cut)`},
		{`{"type":"expired","topic":"t","id":"9","attempt":0,"at":"not a time","detail":"late"}`,
			`not a time expired   t 9 attempt 0 detail="late"`},
		{`{"type":"pushed","topic":"t","id":"9","attempt":0,"at":"2026-05-01T10:12:05.5Z","result":12345678901234567890}`,
			`2026-05-01T10:12:05.500Z pushed    t 9 attempt 0 result=12345678901234567890`},
	} {
		got, err := eventLine([]byte(tc.data))
		if err != nil || got != tc.want {
			t.Errorf("eventLine(%s)\n got %s (%v)\nwant %s", tc.data, got, err, tc.want)
		}
	}
	if _, err := eventLine([]byte(`{"type":`)); err == nil {
		t.Error("an event that is not JSON: no error")
	}
}
