package memcache_test

import (
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
)

// Over the wire: a /t= past kestrel's range is the client's error, as any
// bad get is (issue 20: it was "SERVER_ERROR … redis unavailable"); the
// largest one kestrel takes still waits for an item.
func TestHugeGetTimeoutIsAClientError(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	got := brokertest.Lines(t, b.KestrelAddr, "get q/t=9223372036855\r\n", 1)
	if want := "CLIENT_ERROR bad timeout \"t=9223372036855\": at most 2147483647 milliseconds\r\n"; got[0] != want {
		t.Fatalf("answer %q, want %q", got[0], want)
	}
	got = brokertest.Lines(t, b.KestrelAddr, "set q 0 0 1\r\nx\r\nget q/t=2147483647\r\n", 3)
	if got[0] != "STORED\r\n" || got[1] != "VALUE q/t=2147483647 0 1\r\n" || got[2] != "x\r\n" {
		t.Fatalf("answers %q", got)
	}
}
