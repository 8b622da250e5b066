package broker_test

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
)

// A write whose request arrived whole is carried out even when the client
// hangs up at once, as `printf 'set q 0 0 5 noreply\r\nhello\r\n' | nc -q1`
// does: a hang-up ends only what waits (a reserve, a get with /t=). A
// kestrel set used to be cancelled by it, most times: `SERVER_ERROR push:
// context canceled`, and with noreply nothing told the client its item was
// lost.
func TestWritesOutliveAHangUp(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	const tries = 20
	for _, tt := range []struct {
		name, addr, topic, send string
	}{
		{"kestrel set", b.KestrelAddr, "hk", "set hk 0 0 5\r\nhello\r\n"},
		{"kestrel set noreply", b.KestrelAddr, "hkn", "set hkn 0 0 5 noreply\r\nhello\r\n"},
		{"beanstalkd put", b.BeanstalkAddr, "hb", "use hb\r\nput 0 0 60 5\r\nhello\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for range tries {
				c, err := net.Dial("tcp", tt.addr)
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprint(c, tt.send)
				c.Close()
			}
			var ready float64
			// A minute: only writes that were lost wait for all of it.
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if code, out := brokertest.Call(t, "GET", b.URL+"/api/v1/topics/"+tt.topic, ""); code == 200 {
					if ready, _ = out["ready"].(float64); ready == tries {
						return
					}
				}
			}
			t.Fatalf("%d of %d writes stored after their clients hung up", int(ready), tries)
		})
	}
}
