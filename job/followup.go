package job

import (
	"bytes"
	"encoding/json"
)

// WithResultBody is the body of a follow-up WithResult: {"body": its body
// (a JSON object or array when bodyJSON, else a string), "result": the
// finished job's result (a JSON value's compact text, "" for null)}, as
// compact JSON with nothing escaped that need not be (so its size is its
// parts' and the names', not six bytes a '<').
func WithResultBody(body string, bodyJSON bool, result string) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	b.WriteString(`{"body":`)
	if bodyJSON {
		b.WriteString(body)
	} else if err := enc.Encode(body); err != nil {
		return "", err
	}
	if !bodyJSON {
		b.Truncate(b.Len() - 1) // Encode's newline
	}
	b.WriteString(`,"result":`)
	if result == "" {
		result = "null"
	}
	b.WriteString(result)
	b.WriteString("}")
	return b.String(), nil
}
