package gmqbench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// Kestrel dials clients of kestrel's memcache protocol at addr (gmq's
// kestrel front end). Put is set; PopAck is a plain get (which takes the
// item for good), or with reliable, a reliable read: get <q>/close/open,
// which acks the item read before and opens the next in one round trip.
func Kestrel(addr string, reliable bool) Dialer {
	return func(topic string) (Client, error) {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			return nil, err
		}
		return &kestrelClient{nc: nc, r: bufio.NewReader(nc), w: bufio.NewWriter(nc), topic: topic, reliable: reliable}, nil
	}
}

type kestrelClient struct {
	nc       net.Conn
	r        *bufio.Reader
	w        *bufio.Writer
	topic    string
	reliable bool
	open     bool // an item is open (reliable reads)
}

func (c *kestrelClient) Put(_ context.Context, body []byte, n int) error {
	for range n {
		fmt.Fprintf(c.w, "set %s 0 0 %d\r\n", c.topic, len(body))
		c.w.Write(body)
		c.w.WriteString("\r\n")
		if err := c.w.Flush(); err != nil {
			return err
		}
		if line, err := c.r.ReadString('\n'); err != nil || line != "STORED\r\n" {
			return fmt.Errorf("set: %q %v", line, err)
		}
	}
	return nil
}

func (c *kestrelClient) PopAck(_ context.Context, n int) error {
	key := c.topic + "/t=10000"
	if c.reliable {
		key += "/close/open"
	}
	for range n {
		if err := c.get(key); err != nil {
			return err
		}
		c.open = c.reliable
	}
	if c.open { // ack the last one
		c.open = false
		if err := c.get(c.topic + "/close"); err != io.EOF {
			return err
		}
	}
	return nil
}

// get sends a get and reads its item; io.EOF means the answer was END.
func (c *kestrelClient) get(key string) error {
	fmt.Fprintf(c.w, "get %s\r\n", key)
	if err := c.w.Flush(); err != nil {
		return err
	}
	line, err := c.r.ReadString('\n')
	if err != nil {
		return err
	}
	if line == "END\r\n" {
		return io.EOF
	}
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != "VALUE" {
		return fmt.Errorf("get %s: %q", key, line)
	}
	size, err := strconv.Atoi(f[3])
	if err != nil {
		return fmt.Errorf("get %s: %q", key, line)
	}
	if _, err := c.r.Discard(size + 2); err != nil {
		return err
	}
	if end, err := c.r.ReadString('\n'); err != nil || end != "END\r\n" {
		return fmt.Errorf("get %s: %q after the item, %v", key, end, err)
	}
	return nil
}

func (c *kestrelClient) Close() error {
	_ = c.nc.SetDeadline(time.Now().Add(time.Second))
	return c.nc.Close()
}
