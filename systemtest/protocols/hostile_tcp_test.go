package protocols

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// hostileTCPLimit is the target for the TCP front ends: the broker's peak
// resident memory with 2,000 clients each leaving a request unfinished.
const hostileTCPLimit = 300 << 20

// 2,000 connections to a TCP front end, each leaving a request unfinished
// (a put or set announcing 64 KiB and sending all but its last bytes, a
// JSON-RPC Push of 400 KB), or idle. Before, each held a 64 KiB read buffer
// and a body allocated at its announced size, with no deadline: beanstalkd
// 343 MB, kestrel 387 MB (idle 225 MB; JSON-RPC 1,757 MB), never cut (issue
// 20). Now a connection's buffer is 4 KiB, a body grows as its bytes arrive
// within one budget for every port ([server] body_memory), and a request
// begun must arrive within read_timeout; an idle connection (a consumer in
// reserve) is not cut.
func TestHostileTCPConnections(t *testing.T) {
	t.Parallel() // correctness, not timing: it may share the cores with the others like it
	const conns, readTimeout = 2000, 2 * time.Second
	body := strings.Repeat("x", 65534) // all but the last byte and the CRLF
	for _, tt := range []struct {
		name, port string
		send       string // "" for an idle connection
	}{
		{"beanstalkd put of 64 KiB", "beanstalk", "put 0 0 60 65535\r\n" + body}, // max_job_size's largest
		{"kestrel set of 64 KiB", "kestrel", "set q 0 0 65535\r\n" + body},
		{"kestrel idle", "kestrel", ""},
		{"kestrel text put of a 64 KiB item", "text", "put q:\n" + body},
		{"kestrel text idle", "text", ""},
		{"kestrel thrift frame of 64 KiB", "thrift", "\x00\x00\xff\xff" + body}, // a frame announcing 65,535 bytes, then all but one
		{"kestrel thrift idle", "thrift", ""},
		{"JSON-RPC Push of 400 KB", "rpc", `{"method":"Service.Push","params":[{"topic":"t","body":"` + strings.Repeat("x", 400_000)},
		{"JSON-RPC idle", "rpc", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := plainBroker(t, fmt.Sprintf("[redis]\nbuckets = 4\n[server]\nread_timeout = %s\nmax_connections = 5000\n", readTimeout))
			addr := map[string]string{"beanstalk": b.Beanstalk, "kestrel": b.Kestrel, "text": b.Text, "thrift": b.Thrift, "rpc": b.RPC}[tt.port]
			// A consumer waiting in reserve: idle between requests, for longer than read_timeout.
			waiter, err := net.Dial("tcp", b.Beanstalk)
			if err != nil {
				t.Fatal(err)
			}
			defer waiter.Close()
			fmt.Fprintf(waiter, "reserve\r\n")

			var mu sync.Mutex
			var open []net.Conn
			var wg sync.WaitGroup
			dialing := make(chan struct{}, 100)
			for range conns {
				wg.Go(func() {
					dialing <- struct{}{}
					c, err := net.DialTimeout("tcp", addr, 10*time.Second)
					<-dialing
					if err != nil {
						t.Errorf("dial: %v", err)
						return
					}
					mu.Lock()
					open = append(open, c)
					mu.Unlock()
					if tt.send != "" && !beginRequest(c, tt.send) {
						t.Errorf("a request's first %d bytes were not sent within %s", requestHead, headWait)
					}
				})
			}
			wg.Wait()
			sent := time.Now()
			time.Sleep(time.Second)
			peak := procStatus(t, b.Cmd.Process.Pid, "VmHWM")
			t.Logf("%s: peak RSS %d MB with %d connections", tt.name, peak>>20, len(open))
			if peak > hostileTCPLimit {
				t.Errorf("peak RSS %d MB, over the %d MB target", peak>>20, hostileTCPLimit>>20)
			}
			// Unfinished requests are cut at read_timeout: each is waited for
			// until long past it (a cut one answers at once, so the wait costs
			// only a failing run; a loaded machine cuts late: 7 of 2,000 were
			// still open 3 s past it once on CI, 23 of 2,000 10 s past it beside
			// six CPU-bound processes). Idle connections stay: one look at them
			// all, at once, well past read_timeout.
			deadline := sent.Add(readTimeout + time.Minute)
			if tt.send == "" {
				time.Sleep(time.Until(sent.Add(readTimeout + 3*time.Second)))
				deadline = time.Now().Add(200 * time.Millisecond)
			}
			var cut, kept int
			for _, c := range open {
				wg.Go(func() {
					_ = c.SetReadDeadline(deadline)
					var buf [1]byte
					_, err := c.Read(buf[:])
					var ne net.Error
					mu.Lock()
					if errors.As(err, &ne) && ne.Timeout() {
						kept++
					} else {
						cut++
					}
					mu.Unlock()
					c.Close()
				})
			}
			wg.Wait()
			if tt.send != "" && kept > 0 {
				sockets, _ := os.ReadFile("/proc/net/sockstat")
				t.Errorf("%d unfinished requests still open past read_timeout (%d cut); sockets now:\n%s", kept, cut, sockets)
			}
			if tt.send == "" && cut > 0 {
				t.Errorf("%d idle connections cut", cut)
			}
			_ = waiter.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			var buf [1]byte
			var ne net.Error
			if _, err := waiter.Read(buf[:]); !errors.As(err, &ne) || !ne.Timeout() {
				t.Errorf("a consumer waiting in reserve was cut: %v", err)
			}
		})
	}
}

// requestHead is how much of an unfinished request is sent first, with time
// to spare (headWait): it fits in any socket buffer, so the request has
// begun. The rest is sent for at most 3 s, and most of it is left in the
// kernel. With a 3 s deadline for the whole write, a goroutine that a loaded
// machine runs only after its deadline sends nothing: an idle connection,
// which the broker rightly keeps, not an unfinished request. That is the
// likeliest reading of 79 and then 165 of 2,000 JSON-RPC pushes still open a
// minute past read_timeout in two loaded make tests: the broker's own bounds
// (read deadline, budget wait until it) held in every run alone.
const requestHead, headWait = 1024, 30 * time.Second

// beginRequest sends send over c as an unfinished request: its head surely,
// then as much more as goes within 3 s. It says whether the head went.
func beginRequest(c net.Conn, send string) bool {
	head := send[:min(requestHead, len(send))]
	_ = c.SetWriteDeadline(time.Now().Add(headWait))
	if _, err := c.Write([]byte(head)); err != nil {
		return false
	}
	_ = c.SetWriteDeadline(time.Now().Add(3 * time.Second))
	_, _ = c.Write([]byte(send[len(head):]))
	return true
}
