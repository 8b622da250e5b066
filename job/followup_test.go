package job

import "testing"

// A follow-up's body with the result: compact, nothing escaped that need
// not be, a string body quoted, a JSON one as it is, no result null.
func TestWithResultBody(t *testing.T) {
	for _, tc := range []struct {
		body     string
		bodyJSON bool
		result   string
		want     string
	}{
		{"plain", false, `{"rows":7}`, `{"body":"plain","result":{"rows":7}}`},
		{`{"a":[1,2]}`, true, `"ok"`, `{"body":{"a":[1,2]},"result":"ok"}`},
		{"<&>", false, "", `{"body":"<&>","result":null}`},
		{"line\n\"quoted\"", false, "3", `{"body":"line\n\"quoted\"","result":3}`},
	} {
		got, err := WithResultBody(tc.body, tc.bodyJSON, tc.result)
		if err != nil || got != tc.want {
			t.Errorf("WithResultBody(%q, %v, %q) = %s %v, want %s", tc.body, tc.bodyJSON, tc.result, got, err, tc.want)
		}
	}
}
