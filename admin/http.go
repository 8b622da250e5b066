package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"
)

// path is the i-th argument as a path segment.
func (c *call) path(i int) string { return url.PathEscape(c.args[i]) }

// do sends a request to the API and decodes its JSON answer (nil for none).
// An answer that is not a success is an error with the broker's reason.
func (c *call) do(method, path string, body any) (any, error) {
	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encoding the request: %w", err)
		}
		reader = bytes.NewReader(data)
	}
	// A pop may wait --timeout; anything else should answer well within 10 s.
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(c.timeout*float64(time.Second))+10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+"/api/v1"+path, reader)
	if err != nil {
		return nil, fmt.Errorf("the broker at %s: %w", c.base, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the broker at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", req.URL, err)
	}
	var answer any
	if len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, &answer); err != nil {
			return nil, fmt.Errorf("%s: %s, not JSON", req.URL, resp.Status)
		}
	}
	if resp.StatusCode >= 300 {
		msg := resp.Status
		if m, ok := answer.(map[string]any); ok && m["error"] != nil {
			msg = fmt.Sprintf("%d: %v", resp.StatusCode, m["error"])
		}
		return nil, errors.New(msg)
	}
	return answer, nil
}

// showMap asks the API and shows its answer, an object, as key: value lines.
func (c *call) showMap(method, path string, body any) error {
	answer, err := c.do(method, path, body)
	if err != nil {
		return err
	}
	return c.show(answer, func(w io.Writer) { writeMap(w, answer) })
}

// show prints answer as JSON with --json, else as table does.
func (c *call) show(answer any, table func(io.Writer)) error {
	if c.json {
		enc := json.NewEncoder(c.out)
		enc.SetIndent("", "  ")
		return enc.Encode(answer)
	}
	w := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
	table(w)
	return w.Flush()
}

// writeMap writes an object's fields sorted by name, one a line.
func writeMap(w io.Writer, v any) {
	m, _ := v.(map[string]any)
	for _, k := range sortedKeys(m) {
		fmt.Fprintf(w, "%s\t%s\n", k, text(m[k]))
	}
}

// escapeControls escapes s's control characters (and invalid UTF-8) as Go
// would quote them, so a body cannot move the terminal's cursor; anything
// else, quotes and backslashes and letters of any script, shows as it is.
func escapeControls(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1: // a byte that is not UTF-8
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case unicode.IsControl(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// text renders a JSON value for a table cell.
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case string:
		return escapeControls(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case map[string]any, []any:
		data, _ := json.Marshal(x) // a value decoded from JSON encodes again
		return string(data)
	default:
		return fmt.Sprint(x)
	}
}
