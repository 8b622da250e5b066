package thrift_test

import (
	"strings"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/kestrel/internal/kestreltest"
	"github.com/gmq/gmq/kestrel/thrift/wire"
)

// A thrift client, a text client and a memcache client drive one broker
// (its own listeners, as broker.New opens them): an item put by each is
// read by another, an open read of one protocol holds its item from the
// others, and a status set over thrift is what the other two report.
func TestThriftTextAndMemcacheOnOneBroker(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	if b.ThriftAddr == "" || b.TextAddr == "" || b.KestrelAddr == "" {
		t.Fatalf("the broker's kestrel ports: thrift %q, text %q, memcache %q", b.ThriftAddr, b.TextAddr, b.KestrelAddr)
	}
	thrift := dial(t, b.ThriftAddr)
	text := kestreltest.Dial(t, b.TextAddr) // kept for its open reads

	thrift.put("q", 1, "from thrift")
	text.Must("get q\n", ":from thrift\n") // held open by the text connection
	if got := brokertest.Lines(t, b.KestrelAddr, "get q\r\n", 1)[0]; got != "END\r\n" {
		t.Fatalf("memcache get while text holds the item: %q", got)
	}
	if got := brokertest.Lines(t, b.KestrelAddr, "set q 0 0 13\r\nfrom memcache\r\n", 1)[0]; got != "STORED\r\n" {
		t.Fatalf("memcache set: %q", got)
	}
	items := thrift.get("q", 1, 0, 60_000, "from memcache")
	thrift.settled(false, "q", 1, ids(items)...)
	text.Must("put q:\nfrom text\n\n", "+1\n")
	if got := brokertest.Lines(t, b.KestrelAddr, "get q\r\n", 3); strings.Join(got, "") != "VALUE q 0 9\r\nfrom text\r\nEND\r\n" {
		t.Fatalf("memcache get: %q", got)
	}
	text.Must("get q\n", "*\n") // confirms the thrift item it held
	if info := thrift.peek("q"); info.Items != 0 || info.OpenTransactions != 0 {
		t.Fatalf("all read and confirmed: %+v", info)
	}

	if err := thrift.SetStatus(ctx, wire.Status_READ_ONLY, ""); err != nil {
		t.Fatal(err)
	}
	if got := brokertest.Lines(t, b.KestrelAddr, "status\r\n", 1)[0]; got != "READONLY\r\n" {
		t.Fatalf("memcache status after thrift's set_status: %q", got)
	}
	text.Must("status\n", ":READONLY\n")
	text.Must("status up\n", "+0\n")
	if got, err := thrift.CurrentStatus(ctx); err != nil || got != wire.Status_UP {
		t.Fatalf("thrift current_status after text's: %v %v", got, err)
	}
}
