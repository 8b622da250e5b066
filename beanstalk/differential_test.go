package beanstalk_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/internal/redistest"
)

// The differential test runs the same command sequences against the real
// beanstalkd (Debian's package, the oracle) and against gmq, and compares the
// replies with job ids numbered by first appearance and volatile stats values
// masked. GMQ_REQUIRE_BEANSTALKD=1 (set by .ci/run) turns a missing
// beanstalkd into a failure instead of a skip.

// step is one command on one of a scenario's connections. In cmd, $1, $2…
// stand for the ids of the first, second… job the server reported.
type step struct {
	conn  int
	cmd   string
	sleep time.Duration // before sending
	wait  time.Duration // how long the reply may take (default 3s)
}

var scenarios = map[string][]step{
	"put, peek, reserve, delete": {
		{cmd: "put 5 0 10 5\r\nhello\r\n"}, {cmd: "peek-ready\r\n"}, {cmd: "peek $1\r\n"},
		{cmd: "reserve\r\n"}, {cmd: "stats-job $1\r\n"}, {cmd: "delete $1\r\n"}, {cmd: "delete $1\r\n"},
		{cmd: "stats-job $1\r\n"}, {cmd: "peek-ready\r\n"},
	},
	"priority then id across watched tubes": {
		{cmd: "use a\r\n"}, {cmd: "put 10 0 10 2\r\na1\r\n"}, {cmd: "use b\r\n"},
		{cmd: "put 5 0 10 2\r\nb1\r\n"}, {cmd: "put 5 0 10 2\r\nb2\r\n"}, {cmd: "use a\r\n"},
		{cmd: "put 5 0 10 2\r\na2\r\n"}, {cmd: "watch a\r\n"}, {cmd: "watch b\r\n"},
		{cmd: "reserve\r\n"}, {cmd: "reserve\r\n"}, {cmd: "reserve\r\n"}, {cmd: "reserve\r\n"},
		{cmd: "reserve-with-timeout 0\r\n"},
	},
	"release, bury, kick": {
		{cmd: "put 1 0 10 1\r\nx\r\n"}, {cmd: "put 1 0 10 1\r\ny\r\n"}, {cmd: "reserve\r\n"},
		{cmd: "release $1 9 100\r\n"}, {cmd: "peek-delayed\r\n"}, {cmd: "reserve\r\n"},
		{cmd: "bury $2 4\r\n"}, {cmd: "peek-buried\r\n"}, {cmd: "stats-tube default\r\n"},
		{cmd: "kick 10\r\n"}, {cmd: "kick 10\r\n"}, {cmd: "kick 10\r\n"},
		{cmd: "reserve\r\n"}, {cmd: "bury $1 1\r\n"}, {cmd: "kick-job $1\r\n"}, {cmd: "kick-job $1\r\n"},
		{cmd: "stats-job $1\r\n"}, {cmd: "stats-job $2\r\n"},
	},
	"reservations belong to their connection": {
		{cmd: "put 1 0 60 1\r\nx\r\n"}, {cmd: "reserve\r\n"},
		{conn: 1, cmd: "delete $1\r\n"}, {conn: 1, cmd: "release $1 1 0\r\n"}, {conn: 1, cmd: "bury $1 1\r\n"},
		{conn: 1, cmd: "touch $1\r\n"}, {conn: 1, cmd: "reserve-job $1\r\n"}, {conn: 1, cmd: "reserve-with-timeout 0\r\n"},
		{cmd: "touch $1\r\n"}, {cmd: "quit\r\n", wait: time.Minute}, // the close answers at once
		// The quitter's job comes back when the server sees the close: soon,
		// but later than 2 s on a loaded machine; both answer at once.
		{conn: 1, cmd: "reserve-with-timeout 30\r\n", wait: time.Minute}, {conn: 1, cmd: "stats-job $1\r\n"},
	},
	"reserve-job takes ready, delayed and buried jobs": {
		{cmd: "put 1 100 10 1\r\nd\r\n"}, {cmd: "reserve-job $1\r\n"}, {cmd: "reserve-job $1\r\n"},
		{cmd: "bury $1 2\r\n"}, {cmd: "reserve-job $1\r\n"}, {cmd: "delete $1\r\n"}, {cmd: "reserve-job 999999\r\n"},
	},
	"tubes and watch lists": {
		{cmd: "list-tubes\r\n"}, {cmd: "list-tube-used\r\n"}, {cmd: "list-tubes-watched\r\n"},
		{cmd: "use t1\r\n"}, {cmd: "watch t2\r\n"}, {cmd: "watch t2\r\n"}, {cmd: "ignore default\r\n"},
		{cmd: "ignore t2\r\n"}, {cmd: "ignore nothing\r\n"}, {cmd: "list-tubes\r\n"},
		{cmd: "list-tubes-watched\r\n"}, {cmd: "stats-tube t1\r\n"}, {cmd: "stats-tube t2\r\n"},
		{cmd: "stats-tube nothing\r\n"}, {cmd: "pause-tube nothing 1\r\n"},
	},
	// A tube exists while a connection uses or watches it or a job of any
	// state is in it; "default" always. pheanstalk's testListTubes is the
	// first: gmq kept listing the emptied t4.
	"an emptied tube leaves list-tubes": {
		{cmd: "use t4\r\n"}, {cmd: "put 1 0 10 1\r\nx\r\n"}, {cmd: "watch t4\r\n"}, {cmd: "reserve\r\n"},
		{cmd: "delete $1\r\n"}, {cmd: "use default\r\n"}, {cmd: "list-tubes\r\n"}, {cmd: "ignore t4\r\n"},
		{cmd: "list-tubes\r\n"}, {cmd: "stats-tube t4\r\n"}, {cmd: "stats\r\n"}, {cmd: "pause-tube t4 1\r\n"},
	},
	"a watch alone keeps a tube": {
		{cmd: "watch w\r\n"}, {conn: 1, cmd: "use w\r\n"}, {conn: 1, cmd: "put 1 0 10 1\r\nx\r\n"},
		{conn: 1, cmd: "use default\r\n"}, {cmd: "reserve\r\n"}, {cmd: "delete $1\r\n"},
		{cmd: "list-tubes\r\n"}, {cmd: "stats-tube w\r\n"}, {cmd: "ignore w\r\n"}, {cmd: "list-tubes\r\n"},
		{cmd: "stats-tube w\r\n"}, {cmd: "list-tubes-watched\r\n"},
	},
	"a buried job keeps its tube": {
		{cmd: "use b\r\n"}, {cmd: "put 1 0 10 1\r\nx\r\n"}, {cmd: "watch b\r\n"}, {cmd: "ignore default\r\n"},
		{cmd: "reserve\r\n"}, {cmd: "bury $1 1\r\n"}, {cmd: "watch default\r\n"}, {cmd: "ignore b\r\n"},
		{cmd: "use default\r\n"}, {cmd: "list-tubes\r\n"}, {cmd: "stats-tube b\r\n"}, {cmd: "stats\r\n"},
		{cmd: "delete $1\r\n"}, {cmd: "list-tubes\r\n"}, {cmd: "stats-tube b\r\n"}, {cmd: "stats\r\n"},
	},
	"a delayed job keeps its tube": {
		{cmd: "use d\r\n"}, {cmd: "put 1 100 10 1\r\nx\r\n"}, {cmd: "use default\r\n"}, {cmd: "list-tubes\r\n"},
		{cmd: "stats-tube d\r\n"}, {cmd: "delete $1\r\n"}, {cmd: "list-tubes\r\n"}, {cmd: "stats-tube d\r\n"},
	},
	"default exists with no job and no connection": {
		{cmd: "use x\r\n"}, {cmd: "watch x\r\n"}, {cmd: "ignore default\r\n"},
		{cmd: "stats-tube default\r\n"}, {cmd: "list-tubes\r\n"}, {cmd: "stats\r\n"},
		{cmd: "pause-tube default 0\r\n"}, {cmd: "stats-tube default\r\n"}, {cmd: "list-tubes\r\n"},
	},
	// Leaving is use or ignore, not quit: a quit's reply is the connection's
	// end, which a server may show before it has forgotten the connection.
	"two connections leave a tube in turn": {
		{cmd: "use s\r\n"}, {cmd: "put 1 0 10 1\r\nx\r\n"}, {conn: 1, cmd: "watch s\r\n"},
		{conn: 1, cmd: "reserve\r\n"}, {conn: 1, cmd: "delete $1\r\n"}, {cmd: "list-tubes\r\n"},
		{cmd: "use default\r\n"}, {cmd: "list-tubes\r\n"}, {conn: 1, cmd: "stats-tube s\r\n"},
		{conn: 1, cmd: "ignore s\r\n"}, {cmd: "list-tubes\r\n"}, {conn: 1, cmd: "list-tubes\r\n"},
		{cmd: "stats-tube s\r\n"}, {cmd: "stats\r\n"},
	},
	"malformed and unknown commands": {
		{cmd: "\r\n"}, {cmd: "PUT 1 0 1 1\r\n"}, {cmd: "delete\r\n"}, {cmd: "peek\r\n"}, {cmd: "use\r\n"},
		{cmd: "reserve-with-timeout\r\n"}, {cmd: "statsx\r\n"}, {cmd: "list-tubes extra\r\n"},
		{cmd: "use a b\r\n"}, {cmd: "use -a\r\n"}, {cmd: "use a \r\n"}, {cmd: "delete -1\r\n"},
		{cmd: "delete 18446744073709551616\r\n"}, {cmd: "delete 1x\r\n"}, {cmd: "put 1 0 1 1 extra\r\n"},
		{cmd: "x\r\n"}, {cmd: "put -1 0 1 1\r\n"}, {cmd: "put 4294967296 0 1 1\r\n"},
		{cmd: "put  1  0  1  1\r\nz\r\n"}, {cmd: "put 1 0 1 3\r\nabcde"}, {cmd: "release 1 2\r\n"},
		{cmd: "kick\r\n"}, {cmd: "kick x\r\n"}, {cmd: "kick 1x\r\n"}, {cmd: "pause-tube default\r\n"},
		{cmd: "pause-tube default x\r\n"}, {cmd: "stats-job\r\n"}, {cmd: "touch x\r\n"},
		{cmd: strings.Repeat("a", 230) + "\r\n"}, {cmd: "bury 1\r\n"}, {cmd: "quitter\r\n", wait: time.Minute},
	},
	"too big, and exactly the limit": {
		{cmd: "put 1 0 1 65536\r\n" + strings.Repeat("y", 65536) + "\r\n"},
		{cmd: "put 1 0 1 65535\r\n" + strings.Repeat("y", 65535) + "\r\n"}, {cmd: "stats-job $1\r\n"},
	},
	"ttr 0 becomes 1, and DEADLINE_SOON": {
		{cmd: "put 1 0 0 1\r\nx\r\n"}, {cmd: "stats-job $1\r\n"}, {cmd: "reserve\r\n"},
		{cmd: "reserve-with-timeout 5\r\n"}, {cmd: "delete $1\r\n"}, {cmd: "reserve-with-timeout 0\r\n"},
	},
	// No scenario lets a reservation of an idle connection run out: beanstalkd
	// 1.12 sometimes leaves it reserved for seconds, where gmq returns it to
	// ready on time (TestTTRWhileIdle checks gmq's side).
	"a waiting reserve is woken by DEADLINE_SOON": {
		{cmd: "put 1 0 2 1\r\nx\r\n"}, {cmd: "reserve\r\n"}, {cmd: "reserve-with-timeout 5\r\n"},
		{cmd: "touch $1\r\n"}, {cmd: "release $1 1 0\r\n"}, {cmd: "reserve\r\n"},
	},
	"delay and timeouts": {
		{cmd: "put 1 1 10 1\r\nx\r\n"}, {cmd: "reserve-with-timeout 0\r\n"}, {cmd: "peek-delayed\r\n"},
		{cmd: "reserve-with-timeout 3\r\n"}, {cmd: "stats-job $1\r\n"},
	},
	"pause-tube": {
		{cmd: "put 1 0 10 1\r\nx\r\n"}, {cmd: "pause-tube default 1\r\n"}, {cmd: "reserve-with-timeout 0\r\n"},
		{cmd: "stats-tube default\r\n"}, {cmd: "reserve-with-timeout 3\r\n"}, {cmd: "pause-tube default 0\r\n"},
	},
	// Read at once, time left is a whole second under the full time on
	// beanstalkd (its clock counts nanoseconds): gmq must print the same.
	"time left read at once": {
		{cmd: "put 1 10 10 1\r\nx\r\n"}, {cmd: "stats-job $1\r\n"}, {cmd: "kick-job $1\r\n"},
		{cmd: "reserve\r\n"}, {cmd: "stats-job $1\r\n"}, {cmd: "touch $1\r\n"}, {cmd: "stats-job $1\r\n"},
		{cmd: "release $1 1 10\r\n"}, {cmd: "stats-job $1\r\n"},
		{cmd: "pause-tube default 10\r\n"}, {cmd: "stats-tube default\r\n"},
	},
	"server stats": {
		{cmd: "put 1 0 10 1\r\nx\r\n"}, {cmd: "put 2000 100 10 1\r\ny\r\n"}, {cmd: "use other\r\n"},
		{cmd: "put 1 0 10 1\r\nz\r\n"}, {cmd: "peek-ready\r\n"}, {cmd: "reserve\r\n"}, {cmd: "stats\r\n"},
	},
}

// volatile are stats keys whose values differ between any two servers.
// time-left, pause-time-left and version are compared: clients read them.
var volatile = map[string]bool{"age": true, "pid": true, "rusage-utime": true,
	"rusage-stime": true, "uptime": true, "id": true, "hostname": true, "os": true, "platform": true,
	"binlog-max-size": true, "total-connections": true, "current-connections": true,
	"current-producers": true, "current-workers": true}

var idInReply = regexp.MustCompile(`^(INSERTED|RESERVED|FOUND|BURIED) (\d+)`)

// normalizer numbers job ids by first appearance and masks volatile values.
type normalizer struct{ ids map[string]string }

func (n *normalizer) reply(r string) string {
	if m := idInReply.FindStringSubmatch(r); m != nil {
		if _, ok := n.ids[m[2]]; !ok {
			n.ids[m[2]] = fmt.Sprintf("#%d", len(n.ids)+1)
		}
		r = strings.Replace(r, m[2], n.ids[m[2]], 1)
	}
	if !strings.HasPrefix(r, "OK ") {
		return r
	}
	lines := strings.Split(r, "\n")
	body := lines[2 : len(lines)-1]
	for i, l := range body {
		k, v, ok := strings.Cut(l, ": ")
		switch {
		case ok && k == "id" && n.ids[v] != "":
			body[i] = "id: " + n.ids[v]
		case ok && volatile[k]:
			body[i] = k + ": *"
		}
	}
	if strings.HasPrefix(body[0], "- ") {
		slices.Sort(body) // list-tubes: beanstalkd lists in creation order
	}
	return "OK\n" + strings.Join(body, "\n")
}

// command substitutes $1, $2… with this server's ids.
func (n *normalizer) command(cmd string) string {
	for real, name := range n.ids {
		cmd = strings.ReplaceAll(cmd, "$"+name[1:]+"\r", real+"\r")
		cmd = strings.ReplaceAll(cmd, "$"+name[1:]+" ", real+" ")
	}
	return cmd
}

func run(t *testing.T, addr string, steps []step) []string {
	conns := map[int]*wire{}
	n := &normalizer{ids: map[string]string{}}
	var out []string
	for _, s := range steps {
		w := conns[s.conn]
		if w == nil {
			w = dial(t, addr)
			conns[s.conn] = w
		}
		time.Sleep(s.sleep)
		w.send(n.command(s.cmd))
		wait := s.wait
		if wait == 0 {
			wait = time.Minute // only a reply that never comes waits it out
		}
		out = append(out, n.reply(w.reply(wait)))
		// a reply that a bad put's body may trigger as a second command:
		// waited for 3 s (a loaded machine's server may be slow to send
		// it), which a command that has none spends in full
		if strings.Contains(s.cmd, "extra") {
			out = append(out, n.reply(w.reply(3*time.Second)))
		}
	}
	return out
}

func startBeanstalkd(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("beanstalkd")
	if err != nil {
		if os.Getenv("GMQ_REQUIRE_BEANSTALKD") == "1" {
			t.Fatal("beanstalkd not found (apt-get install -y beanstalkd)")
		}
		t.Skip("beanstalkd not found (apt-get install -y beanstalkd); skipping the differential test")
	}
	// A free port can be taken by another test before beanstalkd binds it, so
	// check that beanstalkd answers there, and try another port if not.
	for range 5 {
		if addr, ok := tryBeanstalkd(t, bin); ok {
			return addr
		}
	}
	t.Fatal("beanstalkd did not start")
	return ""
}

func tryBeanstalkd(t *testing.T, bin string) (string, bool) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "-l", "127.0.0.1", "-p", fmt.Sprint(l.Addr().(*net.TCPAddr).Port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // already gone is fine
		_ = cmd.Wait()         // its exit status after a kill says nothing
	})
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			continue
		}
		w := &wire{t: t, nc: c, r: bufio.NewReader(c)}
		w.send("probe\r\n") // counted by no stat
		ok := w.reply(time.Second) == "UNKNOWN_COMMAND\r\n"
		c.Close()
		return addr, ok
	}
	return "", false
}

func TestDifferentialAgainstBeanstalkd(t *testing.T) {
	if testing.Short() {
		t.Skip("differential test")
	}
	for name, steps := range scenarios {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			oracle := run(t, startBeanstalkd(t), steps)
			b := brokertest.Start(t, redistest.Start(t), nil)
			got := run(t, b.BeanstalkAddr, steps)
			for i := range steps {
				if got[i] != oracle[i] {
					t.Errorf("step %d %q:\n gmq:        %s\n beanstalkd: %s", i, clip(steps[i].cmd), diffLines(got[i], oracle[i]), diffLines(oracle[i], got[i]))
				}
			}
		})
	}
}

// diffLines shows the lines of a that b lacks (the whole of a when short).
func diffLines(a, b string) string {
	if len(a) < 200 {
		return fmt.Sprintf("%q", a)
	}
	var out []string
	for _, l := range strings.Split(a, "\n") {
		if !strings.Contains(b, l+"\n") {
			out = append(out, l)
		}
	}
	return fmt.Sprintf("%q", out)
}
