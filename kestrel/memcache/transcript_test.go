package memcache_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/kestrel/internal/kestreltest"
)

// Each line and gmq's answer, as kestrel's MemcacheHandler gives it (or, where
// gmq differs, as the README says).
func TestTranscript(t *testing.T) {
	_, w := fresh(t)
	bin := "a\x00b\r\nc\xff" // binary data round-trips exactly
	steps := []struct{ send, want string }{
		{"get q\r\n", "END\r\n"},
		{"set q 0 0 5\r\nhello\r\n", "STORED\r\n"},
		{"SET q 7 0 5\r\nworld\r\n", "STORED\r\n"}, // verbs are case-blind; flags are ignored
		{fmt.Sprintf("set q 0 0 %d\r\n%s\r\n", len(bin), bin), "STORED\r\n"},
		{"get q/peek\r\n", value("q/peek", "hello")},
		{"get q\r\n", value("q", "hello")},
		{"gets q\r\n", value("q", "world")},
		{"get q/t=10\r\n", value("q/t=10", bin)},
		{"get q/t=100\r\n", "END\r\n"},
		{"get q/close\r\n", "END\r\n"}, // nothing open: ignored
		{"get q/abort\r\n", "END\r\n"},
		{"set q 0 x 1\r\nx\r\n", "CLIENT_ERROR bad exptime \"x\": want a whole number of seconds (32 bits, as kestrel)\r\n"},
		{"set q 0 99999999999 1\r\nx\r\n", "CLIENT_ERROR bad exptime \"99999999999\": want a whole number of seconds (32 bits, as kestrel)\r\n"},
		{"set q 0 0 70000\r\n" + strings.Repeat("y", 70000) + "\r\n", "NOT_STORED\r\n"}, // over max_body: read, dropped
		{"set bad~name 0 0 1\r\nx\r\n", "CLIENT_ERROR invalid: topic name \"bad~name\" has a character outside A-Za-z0-9-+/;.$_() at byte 3\r\n"},
		{"set a/b 0 0 1\r\nx\r\n", "CLIENT_ERROR invalid: queue name \"a/b\" holds '/', which starts a get's options (kestrel's rule)\r\n"},
		{"version\r\n", "VERSION test\r\n"},
		{"shutdown\r\n", "CLIENT_ERROR shutdown is off ([kestrel] allow_shutdown)\r\n"},
		{"flush_expired q\r\n", "0\r\n"},
		{"flush_all_expired\r\n", "0\r\n"},
		// noreply (pymemcache's default on set and delete): no answer but errors.
		{"set nr 0 0 2 noreply\r\nab\r\nset nr 0 0 2 noreply\r\ncd\r\nget nr\r\n", value("nr", "ab")},
		{"set nr 0 0 70000 noreply\r\n" + strings.Repeat("y", 70000) + "\r\nget nr/peek\r\n", value("nr/peek", "cd")}, // NOT_STORED unsaid
		{"flush nr noreply\r\ndelete nr noreply\r\nget nr\r\n", "END\r\n"},
		{"set nr 0 x 1 noreply\r\nx\r\n", "CLIENT_ERROR bad exptime \"x\": want a whole number of seconds (32 bits, as kestrel)\r\n"},
		{"get q\r\n", "END\r\n"}, // the connection is still usable
	}
	for _, s := range steps {
		w.must(s.send, s.want)
	}
	w.must("quit\r\n", "EOF")
}

// Expiry by memcache's rule: relative seconds under a million, else a Unix
// time; negative (in the past) expires at once. An expired item is never got.
func TestExpiry(t *testing.T) {
	b, w := fresh(t)
	w.must("set e 0 -1 4\r\npast\r\n", "STORED\r\n")
	w.must(fmt.Sprintf("set e 0 %d 7\r\nexpired\r\n", time.Now().Unix()-10), "STORED\r\n")
	w.must("set e 0 1 4\r\nsoon\r\n", "STORED\r\n")
	w.must(fmt.Sprintf("set e 0 %d 5\r\nlater\r\n", time.Now().Unix()+3600), "STORED\r\n")
	w.must("set e 0 0 5\r\never!\r\n", "STORED\r\n")
	w.must("get e/peek\r\n", value("e/peek", "soon"))
	time.Sleep(1100 * time.Millisecond)
	w.must("get e\r\n", value("e", "later"))
	w.must("get e\r\n", value("e", "ever!"))
	w.must("get e\r\n", "END\r\n")
	w.must("set f 0 -5 1\r\nx\r\n", "STORED\r\n")
	w.must("set f 0 -5 1\r\ny\r\n", "STORED\r\n")
	if got := w.do("flush_expired f\r\n"); got != "2\r\n" && got != "0\r\n" { // the timer may be first
		t.Fatalf("flush_expired: %q", got)
	}
	st := w.do("stats\r\n")
	if !strings.Contains(st, "STAT queue_e_expired_items 3\r\n") || !strings.Contains(st, "STAT queue_f_expired_items 2\r\n") {
		t.Fatalf("stats do not count the expired items:\n%s", st)
	}
	if problems, err := b.Pool.Check(t.Context()); err != nil || len(problems) > 0 {
		t.Fatalf("check: %v %v", problems, err)
	}
}

// Requests after which kestrel closes the connection.
func TestClosingErrors(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	for _, tc := range []struct{ send, want string }{
		{"bogus\r\n", "CLIENT_ERROR unknown command \"bogus\"\r\n"},
		{"get /t=5\r\n", "CLIENT_ERROR no queue name\r\n"},
		{"get q/peek/open\r\n", "CLIENT_ERROR peek and abort cannot be combined with open, close or each other\r\n"},
		{"get q/abort/close\r\n", "CLIENT_ERROR peek and abort cannot be combined with open, close or each other\r\n"},
		{"get q/peek/abort\r\n", "CLIENT_ERROR peek and abort cannot be combined with open, close or each other\r\n"},
		{"get q/t=soon\r\n", "CLIENT_ERROR bad timeout \"t=soon\": want /t=<milliseconds>\r\n"},
		{"get q/opne\r\n", "CLIENT_ERROR unknown option \"opne\": gmq knows t=, open, close, abort and peek\r\n"},
		{"get " + strings.Repeat("q", 1100) + "\r\n", "CLIENT_ERROR line too long (the limit is 1024 bytes)\r\n"},
		{"set q 0 0\r\n", "CLIENT_ERROR malformed request line: want set <queue> <flags> <exptime> <bytes>\r\n"},
		{"set q 0 0 -1\r\n", "CLIENT_ERROR bad data chunk: the byte count \"-1\" is not a whole number\r\n"},
		{"set q 0 0 99999999999\r\n", "CLIENT_ERROR bad data chunk: 99999999999 bytes is over the request limit of 8388608 ([server] max_request_body)\r\n"},
		{"set q 0 0 1\r\nxyz\r\n", "CLIENT_ERROR bad data chunk: the data is not followed by CRLF (is the byte count right?)\r\n"},
	} {
		w := dial(t, b.KestrelAddr)
		w.must(tc.send, tc.want)
		if got := w.reply(); got != "EOF" { // the close comes at once: only a failure waits
			t.Errorf("%q: the connection stays open (%q)", kestreltest.Clip(tc.send), got)
		}
	}
}

// TestCloseOpenOfAGoneRead: /close/open acks the open read and opens the
// next in one call (dispatcher.PopParams.After); when the read is gone
// meanwhile (here its queue was flushed over HTTP, as a TTR run out would
// give it to another reader), there is nothing to close and the next item
// is still opened.
func TestCloseOpenOfAGoneRead(t *testing.T) {
	b, w := fresh(t)
	w.set("g", "one")
	w.must("get g/open\r\n", value("g/open", "one"))
	resp, err := http.Post(b.URL+"/api/v1/topics/g/flush", "application/json", nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("flush over HTTP: %v %v", resp, err)
	}
	resp.Body.Close()
	w.set("g", "two")
	w.must("get g/close/open\r\n", value("g/close/open", "two"))
	w.must("get g/close\r\n", "END\r\n")
	w.must("get g\r\n", "END\r\n")
}

func TestReliableReads(t *testing.T) {
	b, w := fresh(t)
	w.set("r", "one")
	w.set("r", "two")

	w.must("get r/open\r\n", value("r/open", "one"))
	other := dial(t, b.KestrelAddr)
	other.must("get r/peek\r\n", value("r/peek", "two")) // the open item is held
	w.must("get r/close/open\r\n", value("r/close/open", "two"))
	w.must("get r/abort\r\n", "END\r\n")
	w.must("get r/open\r\n", value("r/open", "two")) // aborted: back at the head
	w.must("get r/open\r\n", "ERROR\r\n")            // one open read per queue
	if got := w.reply(); got != "EOF" {              // the close comes at once: only a failure waits
		t.Fatalf("a second open read: the connection stays open (%q)", got)
	}
	// The closed connection's open item went back (once the broker has seen
	// the close: later on a loaded machine): the next reader gets it.
	other.must("get r/t=60000/open\r\n", value("r/t=60000/open", "two"))
	other.must("get r\r\n", "ERROR\r\n") // a plain get beside an open read
	third := dial(t, b.KestrelAddr)
	third.must("get r/close\r\n", "END\r\n") // another connection's read is not its to close
	third.must("get r/t=60000\r\n", value("r/t=60000", "two"))
	third.must("get r\r\n", "END\r\n")
}

// An open read is held however long the client takes: the connection
// touches it before its TTR runs out.
func TestOpenReadOutlivesTTR(t *testing.T) {
	// The connection touches an open read a third of its TTR after the last
	// touch (looking every 100 ms): a TTR of 1.2 s leaves 700 ms for a touch
	// running late on a loaded machine.
	b := brokertest.Fresh(t, func(c *config.Config) { c.DefaultTTR = 1200 * time.Millisecond })
	w := dial(t, b.KestrelAddr)
	w.set("slow", "held")
	w.must("get slow/open\r\n", value("slow/open", "held"))
	time.Sleep(4 * time.Second) // over three TTRs
	other := dial(t, b.KestrelAddr)
	other.must("get slow\r\n", "END\r\n")
	w.must("get slow/close\r\n", "END\r\n")
	time.Sleep(1700 * time.Millisecond)   // past a TTR and a timers' round: a lower bound
	other.must("get slow\r\n", "END\r\n") // closed: acked, not back
}

// monitor opens items as they come, up to max_open_reads; confirm acks them.
func TestMonitorAndConfirm(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) { c.KestrelMaxOpenReads = 3 })
	w := dial(t, b.KestrelAddr)
	for _, item := range []string{"a", "b", "c", "d"} {
		w.set("m", item)
	}
	expect := func(what string, want ...string) {
		t.Helper()
		for _, v := range want {
			if got := w.reply(); got != v {
				t.Fatalf("%s: %q, want %q", what, got, v)
			}
		}
	}
	io.WriteString(w.NC, "monitor m 1 2\r\n")
	expect("monitor m 1 2", value("m", "a"), value("m", "b"), "END\r\n")
	w.must("confirm m 3\r\n", "ERROR\r\n")         // only two are open: nothing acked
	w.must("get m/open\r\n", value("m/open", "c")) // a third fits max_open_reads = 3
	w.must("confirm m 2\r\n", "END\r\n")           // a and b acked
	io.WriteString(w.NC, "monitor m 1\r\n")
	expect("monitor m 1", value("m", "d"), "END\r\n") // waits out its second for a third
	w.set("m", "e")
	w.must("get m/open\r\n", value("m/open", "e"))
	w.must("get m/open\r\n", "ERROR\r\n") // a fourth is over max_open_reads: closed
	other := dial(t, b.KestrelAddr)
	other.must("get m/t=60000\r\n", value("m/t=60000", "c")) // the closed connection's reads came back (once the broker saw the close)
}

func TestFlushAndDelete(t *testing.T) {
	b, w := fresh(t)
	for _, q := range []string{"a", "a", "b", "c"} {
		w.set(q, "x")
	}
	w.must("get a/open\r\n", value("a/open", "x"))
	other := dial(t, b.KestrelAddr)
	other.must("flush a\r\n", "END\r\n") // every item, the open one too
	other.must("get a/peek\r\n", "END\r\n")
	w.must("get a/close\r\n", "END\r\n") // its item is gone: nothing to ack
	other.must("delete b\r\n", "DELETED\r\n")
	other.must("get b\r\n", "END\r\n")
	if got := other.do("stats\r\n"); strings.Contains(got, "queue_b_") {
		t.Fatalf("a deleted queue is still in the stats:\n%s", got)
	}
	other.must("flush_all\r\n", "Flushed all queues.\r\n")
	other.must("get c\r\n", "END\r\n")
	other.must("flush bad~name\r\n", "CLIENT_ERROR invalid: topic name \"bad~name\" has a character outside A-Za-z0-9-+/;.$_() at byte 3\r\n")
}

// An item set over memcache is a job like any other, and the other way round.
func TestAcrossFrontEnds(t *testing.T) {
	b, w := fresh(t)
	w.set("x", "from memcache")
	resp, err := http.Get(b.URL + "/api/v1/pop?topic=x")
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Body string }
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || got.Body != "from memcache" {
		t.Fatalf("HTTP pop: %v %+v", err, got)
	}
	resp.Body.Close()
	resp, err = http.Post(b.URL+"/api/v1/jobs", "application/json", bytes.NewBufferString(`{"topic":"x","body":"from http","ttr":0}`))
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("HTTP push: %v %v", err, resp)
	}
	resp.Body.Close()
	w.must("get x\r\n", value("x", "from http"))
	stats := w.do("stats\r\n")
	for _, want := range []string{"STAT version test\r\n", "STAT total_items 2\r\n", "STAT cmd_set 1\r\n", "STAT get_hits 1\r\n",
		"STAT queue_x_total_items 2\r\n", "STAT queue_creates 1\r\n", "STAT queue_expires 0\r\n", "STAT queue_x_open_transactions 1\r\n", "STAT queue_x_bytes 13\r\n", "END\r\n"} {
		if !strings.Contains(stats, want) {
			t.Errorf("stats lack %q:\n%s", want, stats)
		}
	}
	for _, counted := range []string{"bytes_read", "bytes_written"} {
		if !regexp.MustCompile(`STAT ` + counted + ` [1-9][0-9]*\r\n`).MatchString(stats) {
			t.Errorf("stats do not count %s:\n%s", counted, stats)
		}
	}
	w.set("x", "next")
	if _, err := io.WriteString(w.NC, "dump_stats x\r\n"); err != nil {
		t.Fatal(err)
	}
	var dump []string
	for {
		line := w.reply()
		dump = append(dump, line)
		if line == "END\r\n" || strings.HasPrefix(line, "ERR") || line == "EOF" {
			break
		}
	}
	want := []string{"queue 'x' {\r\n", "  items=1\r\n", "  bytes=17\r\n", "  total_items=3\r\n", "  logsize=0\r\n",
		"  expired_items=0\r\n", "  mem_items=1\r\n", "  mem_bytes=17\r\n"}
	if len(dump) < 13 || !slices.Equal(dump[:len(want)], want) || dump[11] != "  open_transactions=1\r\n" || dump[12] != "}\r\n" {
		t.Errorf("dump_stats:\n%q", dump)
	}
}

// A memcache client that kestrel's Python users have. Debian's package
// installs it for Debian's python3, which may not be the first on PATH.
func TestPymemcache(t *testing.T) {
	python := ""
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(p, "-c", "import pymemcache").Run() == nil {
			python = p
			break
		}
	}
	if python == "" {
		if os.Getenv("GMQ_REQUIRE_PYTHON") == "1" {
			t.Fatal("no python3 with pymemcache (apt-get install python3-pymemcache)")
		}
		t.Skip("no python3 with pymemcache (apt-get install python3-pymemcache)")
	}
	b := brokertest.Fresh(t, smallQueue("pyfull"))
	host, port, _ := net.SplitHostPort(b.KestrelAddr)
	out, err := exec.Command(python, "testdata/pymemcache_client.py", host, port).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// php-memcached, the memcache client PHP users have (libmemcached underneath).
func TestPHPMemcached(t *testing.T) {
	if err := exec.Command("php", "-r", `exit(class_exists("Memcached") ? 0 : 1);`).Run(); err != nil {
		if os.Getenv("GMQ_REQUIRE_PHP") == "1" {
			t.Fatal("no php with the memcached extension (apt-get install php-memcached)")
		}
		t.Skip("no php with the memcached extension (apt-get install php-memcached)")
	}
	b := brokertest.Fresh(t, smallQueue("phpfull"))
	host, port, _ := net.SplitHostPort(b.KestrelAddr)
	out, err := exec.Command("php", "testdata/php_memcached_client.php", host, port).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// smallQueue configures a queue that holds one item.
func smallQueue(name string) func(*config.Config) {
	return func(c *config.Config) { c.Topics = map[string]job.TopicConfig{name: {"max_items": "1"}} }
}

// libmemcached-tools' memccp and memccat (Debian's names for memcp and
// memcat): files stored as items named by their base names, items printed.
func TestLibmemcachedTools(t *testing.T) {
	if _, err := exec.LookPath("memccp"); err != nil {
		if os.Getenv("GMQ_REQUIRE_MEMCTOOLS") == "1" {
			t.Fatal("no memccp (apt-get install libmemcached-tools)")
		}
		t.Skip("no memccp (apt-get install libmemcached-tools)")
	}
	b := brokertest.Fresh(t, smallQueue("mcfull"))
	servers := "--servers=" + b.KestrelAddr
	dir := t.TempDir()
	file := func(name, data string) string {
		path := dir + "/" + name
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	run := func(tool string, args ...string) (string, error) {
		out, err := exec.Command(tool, append([]string{servers}, args...)...).CombinedOutput()
		return string(out), err
	}
	mustRun := func(tool string, args ...string) string {
		out, err := run(tool, args...)
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", tool, args, err, out)
		}
		return out
	}
	bin := "\x00\xffbinary\r\nEND\r\n"
	mustRun("memccp", file("mc", bin))
	mustRun("memccp", "--expire=1", file("mcexp", "short-lived"))
	mustRun("memccp", file("mcfull", "one"))
	if out, err := run("memccp", file("mcfull", "two")); err == nil {
		t.Errorf("memccp to a full queue succeeded: %s", out)
	}
	// memccat ends each value with a newline of its own.
	if got := mustRun("memccat", "mc/peek"); got != bin+"\n" {
		t.Errorf("memccat mc/peek: %q", got)
	}
	if got := mustRun("memccat", "mc"); got != bin+"\n" {
		t.Errorf("memccat mc: %q", got)
	}
	if out, err := run("memccat", "mc"); err == nil {
		t.Errorf("memccat of an empty queue found %q", out)
	}
	run("memccat", "mcfan+a") // a reference: the child starts getting copies
	mustRun("memccp", file("mcfan", "to all"))
	if got := mustRun("memccat", "mcfan+a"); got != "to all\n" {
		t.Errorf("memccat of a fanout child: %q", got)
	}
	time.Sleep(1200 * time.Millisecond)
	if out, err := run("memccat", "mcexp"); err == nil {
		t.Errorf("memccat got an expired item: %q", out)
	}
}

// A queue with unique_from = body keeps one item per body: a set of a body
// that is held answers STORED (the item that holds it stands for it).
func TestUniqueFromBodyOverMemcache(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) {
		c.Topics = map[string]job.TopicConfig{"once": {"unique_from": "body"}}
	})
	w := dial(t, b.KestrelAddr)
	for _, s := range []struct{ send, want string }{
		{"set once 0 0 1\r\na\r\n", "STORED\r\n"},
		{"set once 0 0 1\r\na\r\n", "STORED\r\n"},
		{"set once 0 0 1\r\nb\r\n", "STORED\r\n"},
		{"get once\r\n", value("once", "a")},
		{"get once\r\n", value("once", "b")},
		{"get once\r\n", "END\r\n"},
	} {
		w.must(s.send, s.want)
	}
}

// A queue with group_from takes a set's group from its JSON body: gets take
// the groups in turn.
func TestGroupFromOverMemcache(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) {
		c.Topics = map[string]job.TopicConfig{"fair": {"group_from": "tenant"}}
	})
	w := dial(t, b.KestrelAddr)
	a1, a2, b1 := `{"tenant":"a","n":1}`, `{"tenant":"a","n":2}`, `{"tenant":"b","n":1}`
	for _, s := range []struct{ send, want string }{
		{fmt.Sprintf("set fair 0 0 %d\r\n%s\r\n", len(a1), a1), "STORED\r\n"},
		{fmt.Sprintf("set fair 0 0 %d\r\n%s\r\n", len(a2), a2), "STORED\r\n"},
		{fmt.Sprintf("set fair 0 0 %d\r\n%s\r\n", len(b1), b1), "STORED\r\n"},
		{"get fair\r\n", value("fair", a1)},
		{"get fair\r\n", value("fair", b1)},
		{"get fair\r\n", value("fair", a2)},
	} {
		w.must(s.send, s.want)
	}
}
