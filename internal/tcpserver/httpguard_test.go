package tcpserver

import (
	"bufio"
	"strings"
	"testing"
)

func TestLooksLikeHTTP(t *testing.T) {
	for _, tt := range []struct {
		in   string
		http bool
	}{
		{"POST / HTTP/1.1\r\nHost: 127.0.0.1:11300\r\n", true},
		{"GET /x?y HTTP/1.0\r\n", true},
		{"OPTIONS * HTTP/1.1\r\n", true},
		{"Host: 127.0.0.1\r\n", true},
		{"host:x\r\n", true},
		{"GET /" + strings.Repeat("a", 2*httpLineLimit), true}, // a long URL, judged by its start
		{"GET q\r\n", false},                                   // kestrel's get, upper case
		{"GET q/t=100/open\r\n", false},
		{"GET HTTP/x\r\n", false},
		{"put 0 0 60 3\r\nabc\r\n", false},
		{"reserve\r\n", false},
		{`{"method":"Service.Push","params":[{}],"id":1}`, false}, // JSON-RPC: no newline
		{"stats", false},
		{"", false},
		{"P", false},
	} {
		r := bufio.NewReaderSize(strings.NewReader(tt.in), httpLineLimit)
		line, complete, _ := firstLine(r)
		if got := looksLikeHTTP(line, complete); got != tt.http {
			t.Errorf("%.40q: HTTP %v, want %v", tt.in, got, tt.http)
		}
		if rest, _ := r.Peek(r.Buffered()); !strings.HasPrefix(tt.in, string(rest)) {
			t.Errorf("%.40q: the peeked bytes were consumed", tt.in)
		}
	}
}

func FuzzLooksLikeHTTP(f *testing.F) {
	for _, s := range []string{"POST / HTTP/1.1\r\n", "GET q\r\n", "Host: x\r\n", `{"id":1}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		r := bufio.NewReaderSize(strings.NewReader(in), httpLineLimit)
		line, complete, _ := firstLine(r)
		if len(line) > httpLineLimit || (complete && !strings.HasSuffix(string(line), "\n")) {
			t.Fatalf("line %q complete %v", line, complete)
		}
		_ = looksLikeHTTP(line, complete)
		if got, _ := r.Peek(len(line)); string(got) != string(line) {
			t.Fatalf("the line was consumed")
		}
	})
}
