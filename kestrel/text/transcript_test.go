package text_test

import (
	"strings"
	"testing"

	"github.com/gmq/gmq/internal/budget"
	"github.com/gmq/gmq/kestrel/internal/kestreltest"
	kestreltext "github.com/gmq/gmq/kestrel/text"
)

// Each request and gmq's answer, as kestrel's TextHandler gives it (or,
// where gmq differs, as the package's doc says), on one connection.
func TestTranscript(t *testing.T) {
	_, addr := start(t, func(o *kestreltext.Options) { o.MaxOpenReads = 3 })
	w := dial(t, addr)
	bin := "a\x00b\rc\xff\x01 :*+-" // every byte but LF round-trips, a CR inside too
	steps := []struct {
		send string
		want []string
	}{
		{"get q\n", []string{"*\n"}},
		{"peek q\r\n", []string{"*\n"}}, // a CR before the LF is stripped
		{"put q:\nhello\nworld\r\n" + bin + "\n\n", []string{"+3\n"}},
		{"PUT q 60000:\nlater\n\n", []string{"+1\n"}}, // verbs are case-blind
		{"peek q\n", []string{":hello\n"}},
		{"get q\n", []string{":hello\n"}},
		{"peek q\n", []string{":world\n"}}, // the peek confirmed hello
		{"get q\n", []string{":world\n"}},
		{"get q 10\n", []string{":" + bin + "\n"}}, // confirms world
		{"get q 100\n", []string{":later\n"}},
		{"get q 50\n", []string{"*\n"}},
		{"get q -5\n", []string{"*\n"}}, // a negative timeout is none, as kestrel's

		// confirm: the oldest open reads, all or none; 0 is "too many", as kestrel.
		{"put c:\nx\ny\n\n", []string{"+2\n"}},
		{"get c\n", []string{":x\n"}},
		{"confirm c 2\n", []string{"-Not that many transactions open.\n"}},
		{"confirm c 0\n", []string{"-Not that many transactions open.\n"}},
		{"confirm c 1\n", []string{"+1\n"}},
		{"confirm c 1\n", []string{"-Not that many transactions open.\n"}},
		{"confirm c\n", []string{"-Queue name & count required.\n"}},
		{"confirm c x\n", []string{"-Error parsing count.\n"}},
		{"confirm c -1\n", []string{"-Error parsing count.\n"}},

		// Missing arguments and bad numbers: kestrel's messages.
		{"get\n", []string{"-Queue name required.\n"}},
		{"peek\n", []string{"-Queue name required.\n"}},
		{"put:\nx\n\n", []string{"-Queue name required.\n"}},
		{"flush\n", []string{"-Queue name required.\n"}},
		{"delete\n", []string{"-Queue name required.\n"}},
		{"monitor c\n", []string{"-Queue name & timeout required.\n"}},
		{"monitor c soon\n", []string{"-Error parsing timeout.\n"}},
		{"get c soon\n", []string{"-Error parsing timeout.\n"}},
		{"peek c 1.5\n", []string{"-Error parsing timeout.\n"}},
		{"get c 99999999999\n", []string{"-Error parsing timeout.\n"}}, // kestrel's is an Int
		{"put c never:\nx\n\n", []string{"-Error parsing expiration time.\n"}},
		{"get bad~name\n", []string{"-invalid: topic name \"bad~name\" has a character outside A-Za-z0-9-+/;.$_() at byte 3\n"}},
		{"put bad~name:\nx\n\n", []string{"-invalid: topic name \"bad~name\" has a character outside A-Za-z0-9-+/;.$_() at byte 3\n"}},

		// An expiration in milliseconds from now: 0 or less expires at once.
		{"put e -1:\ngone\n\n", []string{"+1\n"}},
		{"put e 0:\ngone too\n\n", []string{"+1\n"}},
		{"put e 600000:\nstays\n\n", []string{"+1\n"}},
		{"peek e\n", []string{":stays\n"}},

		{"flush c\n", []string{"+0\n"}},
		{"peek c\n", []string{"*\n"}},
		{"delete e\n", []string{"+0\n"}},
		{"peek e\n", []string{"*\n"}},
		{"version\n", []string{":test\n"}},
		{"status\n", []string{":UP\n"}},
		{"status bogus\n", []string{"-Unknown status.\n"}},
		{"status ReadOnly\n", []string{"+0\n"}},
		{"status\n", []string{":READONLY\n"}},
		{"put q:\nrefused\n\n", []string{"-item 1 of 1 (0 put before it): push: the server status is readonly: pushes, deletes and flushes are refused while queues drain\n"}},
		{"status up\n", []string{"+0\n"}},
		{"shutdown\n", []string{"-Shutdown is off on this broker ([kestrel] allow_shutdown).\n"}},
		{"bogus arg\n", []string{"-Unknown command: bogus\n"}},
		{"\n", []string{"-Unknown command: \n"}},
		{"get q\n", []string{"*\n"}}, // the connection is still usable
	}
	for _, s := range steps {
		w.Must(s.send, s.want...)
	}
	w.Must("quit\n", "EOF")
}

// Requests after which the connection closes: what follows them cannot be
// told from commands.
func TestClosingErrors(t *testing.T) {
	_, addr := start(t, func(o *kestreltext.Options) { o.MaxRequest = 1000 })
	for _, tc := range []struct{ send, want string }{
		{"get " + strings.Repeat("q", 1100) + "\n", "-Line too long (the limit is 1024 bytes).\n"},
		{"put q\nhello\n\n", "-A put's line ends in ':' (put <queue> [expiration_ms]:).\n"},
		{"put q:\n" + strings.Repeat("x\n", 600) + "\n", "-Put over the request limit of 1000 bytes ([server] max_request_body).\n"},
		{"put q:\n" + strings.Repeat("y", 2000) + "\n\n", "-Put over the request limit of 1000 bytes ([server] max_request_body).\n"},
	} {
		w := dial(t, addr)
		w.Must(tc.send, tc.want)
		// The close comes at once (only a failure waits): an end of file, or
		// a reset where the server closed with the put's rest unread.
		if got := w.Line(); got != "EOF" && !strings.HasSuffix(got, "connection reset by peer") {
			t.Errorf("%q: the connection stays open (%q)", kestreltest.Clip(tc.send), got)
		}
	}
}

// Items a put does not count: over the item limit, and past kestrel's
// 1,024 (read up to the empty line and dropped, not run as commands).
func TestPutLimits(t *testing.T) {
	_, addr := start(t, func(o *kestreltext.Options) { o.MaxItemSize = 100 })
	w := dial(t, addr)
	w.Must("put big:\n"+strings.Repeat("y", 101)+"\nsmall\n"+strings.Repeat("z", 100)+"\r\n\n", "+2\n")
	w.Must("get big\n", ":small\n")
	w.Must("get big\n", ":"+strings.Repeat("z", 100)+"\n")
	w.Must("get big\n", "*\n")
	var put strings.Builder
	put.WriteString("put many:\n")
	for range 1030 {
		put.WriteString("delete many\n") // were they read as commands, the queue would go
	}
	put.WriteString("\n")
	w.Must(put.String(), "+1024\n")
	w.Must("confirm many 1\n", "-Not that many transactions open.\n")
	w.Must("monitor many 0\n", ":delete many\n", "*\n") // max_open_reads (1): one at a time
}

// The body budget: a put's first 4 KiB are its connection's own, the rest
// is taken from the budget as it arrives. Here the budget is one unit (32
// KiB) and the item needs two: the put waits budget.Wait for the second,
// then the rest is read and dropped, nothing is put, and the answer says to
// try again; the connection reads on, its unit given back.
func TestPutOverTheBudget(t *testing.T) {
	_, addr := start(t, func(o *kestreltext.Options) { o.Budget = budget.New(1) })
	w := dial(t, addr)
	w.Must("put q:\n"+strings.Repeat("x", 40<<10)+"\nnot put either\n\n",
		"-busy: too many request bodies are being read at once ([server] body_memory): try again\n")
	w.Must("put q:\nsmall\n\n", "+1\n")
	w.Must("get q\n", ":small\n")
}
