package tcpserver

import (
	"bufio"
	"net"
	"testing"
	"time"
)

func TestLimitListenerRefusesOverTheLimit(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(func(c net.Conn) {
		buf := make([]byte, 1)
		c.Read(buf) // hold the connection until the client goes
	}, nil)
	go s.Serve(LimitListener(ln, 2, func(c net.Conn) { c.Write([]byte("FULL\r\n")) }, nil))
	defer s.Close()
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	time.Sleep(50 * time.Millisecond)
	third, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if err := third.SetReadDeadline(time.Now().Add(2 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(third).ReadString('\n'); err != nil || line != "FULL\r\n" {
		t.Fatalf("third connection: %q %v, want the refusal", line, err)
	}
	held[0].Close()
	for deadline := time.Now().Add(2 * time.Second); s.Connections() > 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the closed connection was not released")
		}
	}
	again, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	time.Sleep(50 * time.Millisecond)
	if s.Connections() != 2 {
		t.Fatalf("%d connections after one freed a place, want 2", s.Connections())
	}
	held[1].Close()
}
