package text_test

import (
	"fmt"
	"net/http"
	"regexp"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
	kestreltext "github.com/gmq/gmq/kestrel/text"
)

// An item put over the text protocol is a job like any other, and the
// other way round.
func TestAcrossProtocols(t *testing.T) {
	b, addr := start(t, nil)
	w := dial(t, addr)
	w.Must("put x:\nfrom text\n\n", "+1\n")
	got := brokertest.MustCall(t, http.StatusOK, "GET", b.URL+"/api/v1/pop?topic=x", "")
	if got["body"] != "from text" {
		t.Fatalf("HTTP pop: %v", got)
	}
	brokertest.MustCall(t, http.StatusCreated, "POST", b.URL+"/api/v1/jobs", `{"topic":"x","body":"from http"}`)
	brokertest.MustCall(t, http.StatusCreated, "POST", b.URL+"/api/v1/jobs", `{"topic":"x","body":"taken","ttr":0}`)
	w.Must("get x\n", ":from http\n")
	w.Must("get x\n", ":taken\n") // a TTR of 0: removed as popped; the one before confirmed
	w.Must("get x\n", "*\n")
}

// An open read is the connection's until its next fetch confirms it; a
// connection that ends gives its open reads back to the head of the queue.
func TestOpenReadsOnDisconnect(t *testing.T) {
	_, addr := start(t, nil)
	w := dial(t, addr)
	w.Must("put r:\none\ntwo\n\n", "+2\n")
	w.Must("get r\n", ":one\n")
	other := dial(t, addr)
	other.Must("peek r\n", ":two\n") // one is held
	other.Must("get r\n", ":two\n")  // and now two
	w.NC.Close()
	// Given back once the broker has seen the close (later on a loaded
	// machine): the wait, which confirms two, ends when it comes.
	other.Must("get r 60000\n", ":one\n")
	other.Must("get r\n", "*\n") // confirms one
	other.NC.Close()
	third := dial(t, addr)
	third.Must("peek r\n", "*\n") // both were confirmed: none came back
}

// A get with a timeout waits, holding no Redis connection, and a put on
// another connection wakes it; a hang-up ends a wait.
func TestGetWaitsForPut(t *testing.T) {
	b, addr := start(t, nil)
	waiting := dial(t, addr)
	waiting.Send("get w 60000\n")
	brokertest.Eventually(t, "the get waits", func() bool { return b.Dispatcher.WaitingOn("w") == 1 })
	dial(t, addr).Must("put w:\nwake\n\n", "+1\n")
	waiting.Expect("the waiting get", ":wake\n")

	gone := dial(t, addr)
	gone.Send("peek h 60000\n")
	brokertest.Eventually(t, "the peek waits", func() bool { return b.Dispatcher.WaitingOn("h") == 1 })
	gone.NC.Close()
	brokertest.Eventually(t, "the hang-up ends the wait", func() bool { return b.Dispatcher.WaitingOn("h") == 0 })
}

// monitor opens items as they come, up to max_open_reads, then "*";
// confirm acks them; the next fetch confirms what is still open.
func TestMonitorAndConfirm(t *testing.T) {
	_, addr := start(t, func(o *kestreltext.Options) { o.MaxOpenReads = 3 })
	w := dial(t, addr)
	w.Must("put m:\na\nb\nc\nd\n\n", "+4\n")
	w.Must("monitor m 60000\n", ":a\n", ":b\n", ":c\n", "*\n") // three open: no wait
	w.Must("confirm m 4\n", "-Not that many transactions open.\n")
	w.Must("confirm m 2\n", "+2\n")
	w.Must("monitor m 0\n", ":d\n", "*\n") // confirms c; what is ready even with no time
	w.NC.Close()                           // d goes back
	other := dial(t, addr)
	other.Send("monitor m 60000\n")
	other.Expect("the monitor", ":d\n") // given back once the broker has seen the close
	w2 := dial(t, addr)
	w2.Must("put m:\ne\nf\n\n", "+2\n")
	other.Expect("the monitor", ":e\n", ":f\n", "*\n") // three open: it ends
	w2.Must("monitor m 1\n", "*\n")                    // waits out its millisecond: all are held
}

// An item holding a line feed cannot be carried: a get gives it back (a
// TTR of 0 too: pushed again) and says to read it over another protocol;
// nothing is lost.
func TestLineFeedItem(t *testing.T) {
	b, addr := start(t, nil)
	w := dial(t, addr)
	for _, tc := range []struct{ topic, ttr string }{{"lf", "30"}, {"lf0", "0"}} {
		pushed := brokertest.MustCall(t, http.StatusCreated, "POST", b.URL+"/api/v1/jobs",
			fmt.Sprintf(`{"topic":%q,"body":"two\nlines","ttr":%s}`, tc.topic, tc.ttr))
		id := fmt.Sprint(pushed["id"])
		for _, fetch := range []string{"peek ", "get ", "monitor "} {
			w.Send(fetch + tc.topic + " 0\n")
			// The answer names the job that holds the item now: a copy, of
			// a new number, for a TTR of 0.
			got := w.Line()
			if want := lfAnswer(id, tc.topic); got != want && (tc.ttr != "0" || !lfAnswerRE.MatchString(got)) {
				t.Fatalf("%s%s: %q, want %q", fetch, tc.topic, got, want)
			}
		}
		got := brokertest.MustCall(t, http.StatusOK, "GET", b.URL+"/api/v1/pop?topic="+tc.topic, "")
		if got["body"] != "two\nlines" {
			t.Fatalf("%s: HTTP pop after the give-back: %v", tc.topic, got)
		}
	}
	w.Must("get lf\n", "*\n")
}

var lfAnswerRE = regexp.MustCompile(`^-item [0-9]+ holds a line feed: read lf0 over another protocol\n$`)

func lfAnswer(id, queue string) string {
	return "-item " + id + " holds a line feed: read " + queue + " over another protocol\n"
}

// A connection that speaks HTTP first is closed unread (tcpserver's guard).
func TestHTTPIsRefused(t *testing.T) {
	_, addr := start(t, nil)
	w := dial(t, addr)
	w.Must("POST /put HTTP/1.1\r\nHost: x\r\n\r\nput q:\nx\n\n", "EOF")
}
