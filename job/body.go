package job

import "encoding/json"

// BodyValue is a body as the JSON front ends (HTTP, JSON-RPC) show it: one
// pushed as a JSON object or array (asJSON) is that JSON, any other a
// string, whatever it holds. A body that is not whole JSON after all (a
// list's preview of a longer one, cut at its first bytes; a body an older
// broker changed without the flag) is shown as a string, not as JSON that
// would fail the answer's encoding after its job was taken.
func BodyValue(body string, asJSON bool) any {
	if asJSON {
		if b := []byte(body); json.Valid(b) {
			return json.RawMessage(b)
		}
	}
	return body
}
