package tcpserver

import (
	"bufio"
	"bytes"
	"net"
)

// A web page can make the operator's browser send HTTP to any port it
// reaches, 127.0.0.1's included: a no-cors fetch's body arrives after the
// request line and headers, and a line protocol that answers each header
// line with an error and reads on would run the body's commands (issue 20: a
// page stored a job and deleted another through the beanstalkd port). So a
// connection whose first line is an HTTP request line is closed unread, as
// Redis does on its own port. None of gmq's TCP protocols can start that way:
// beanstalkd's and memcache's verbs are one word, JSON-RPC starts with '{'.

// httpLineLimit is how much of a first line is looked at: a request line
// longer than this (a long URL) is judged by its start.
const httpLineLimit = 1024

var httpMethods = [][]byte{[]byte("GET"), []byte("POST"), []byte("PUT"), []byte("HEAD"), []byte("DELETE"),
	[]byte("OPTIONS"), []byte("PATCH"), []byte("CONNECT"), []byte("TRACE")}

// firstLine waits for the connection's first line (or httpLineLimit bytes)
// and returns it, still unread in r; complete says a newline ended it. It
// stops waiting as soon as the bytes so far cannot start an HTTP request
// (a JSON-RPC client sends no newline after its request, and waits). An
// error (the client went away, or sent less and closed) ends the wait.
func firstLine(r *bufio.Reader) (line []byte, complete bool, err error) {
	for seen := 0; ; {
		want := r.Buffered() // all that came; one byte more once those are seen
		if want <= seen {
			want = seen + 1
		}
		buf, err := r.Peek(min(want, httpLineLimit))
		seen = len(buf)
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			return buf[:i+1], true, nil
		}
		if len(buf) >= httpLineLimit || err != nil || !mayStartHTTP(buf) {
			return buf, false, err
		}
	}
}

// mayStartHTTP says whether buf is the start of an HTTP method and its
// space, or of a Host header, or has one of them at its start.
func mayStartHTTP(buf []byte) bool {
	starts := func(word []byte, fold bool) bool {
		n := min(len(buf), len(word))
		if fold {
			return bytes.EqualFold(buf[:n], word[:n])
		}
		return bytes.Equal(buf[:n], word[:n])
	}
	if starts([]byte("host:"), true) {
		return true
	}
	for _, m := range httpMethods {
		if starts(append(m[:len(m):len(m)], ' '), false) {
			return true
		}
	}
	return false
}

// looksLikeHTTP says whether a connection's first line is an HTTP request
// line: an HTTP method, a target and HTTP/x.y, or a line too long to end
// within httpLineLimit after a method and a target starting with '/'.
// A header line (Host:) first counts too.
func looksLikeHTTP(line []byte, complete bool) bool {
	if len(line) >= 5 && bytes.EqualFold(line[:5], []byte("host:")) {
		return true
	}
	sp := bytes.IndexByte(line, ' ')
	if sp < 0 {
		return false
	}
	method := line[:sp]
	known := false
	for _, m := range httpMethods {
		known = known || bytes.Equal(method, m)
	}
	if !known {
		return false
	}
	if complete { // METHOD target HTTP/x.y: three fields, which no verb of ours has with a version last
		fields := bytes.Fields(line)
		return len(fields) == 3 && bytes.HasPrefix(fields[2], []byte("HTTP/"))
	}
	return bytes.HasPrefix(line[sp+1:], []byte("/")) || bytes.HasPrefix(line[sp+1:], []byte("http"))
}

// peekedConn is a connection whose first bytes were peeked: reads come from
// the buffered reader first.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// refuseHTTP waits for nc's first line: an HTTP request line closes the
// connection (refused true, logged once a burst); otherwise the connection
// is returned to be served with the peeked bytes still to read.
func (s *Server) refuseHTTP(nc net.Conn) (net.Conn, bool) {
	r := bufio.NewReaderSize(nc, httpLineLimit)
	line, complete, _ := firstLine(r) // an error shows again on the handler's first read
	if looksLikeHTTP(line, complete) {
		s.httpBurst.Event("remote", nc.RemoteAddr().String())
		return nil, true
	}
	return &peekedConn{Conn: nc, r: r}, false
}
