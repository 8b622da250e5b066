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
	// The server counts both before the third comes (at once, or later on a
	// loaded machine); a minute is only for a failure.
	for deadline := time.Now().Add(time.Minute); s.Connections() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections counted, want 2", s.Connections())
		}
	}
	third, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if err := third.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(third).ReadString('\n'); err != nil || line != "FULL\r\n" {
		t.Fatalf("third connection: %q %v, want the refusal", line, err)
	}
	held[0].Close()
	for deadline := time.Now().Add(time.Minute); s.Connections() > 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the closed connection was not released")
		}
	}
	again, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	for deadline := time.Now().Add(time.Minute); s.Connections() != 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections after one freed a place, want 2", s.Connections())
		}
	}
	held[1].Close()
}
