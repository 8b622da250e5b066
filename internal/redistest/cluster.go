package redistest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Cluster is a Redis Cluster of real redis-server processes owned by a test.
type Cluster struct {
	Nodes []*Server // masters first, then replicas
}

// StartCluster starts masters × (1 + replicas) cluster nodes on free ports
// and joins them with redis-cli --cluster create; they stop when the test
// ends.
func StartCluster(tb testing.TB, masters, replicas int) *Cluster {
	tb.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		tb.Fatalf("redis-cli not found (apt-get install -y redis-server): %v", err)
	}
	c := &Cluster{}
	for i := range masters * (1 + replicas) {
		port, err := freeClusterPort()
		if err != nil {
			tb.Fatal(err)
		}
		dir := filepath.Join(tb.TempDir(), "node"+strconv.Itoa(i))
		s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), dir: dir,
			extra: []string{"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"),
				"--cluster-node-timeout", "2000"}}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := s.launch(); err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(s.Stop)
		c.Nodes = append(c.Nodes, s)
	}
	args := []string{"--cluster", "create"}
	for _, n := range c.Nodes {
		args = append(args, n.Addr)
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		tb.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	// The cluster is usable once every node agrees its state is ok.
	deadline := time.Now().Add(20 * time.Second)
	for _, n := range c.Nodes {
		n.waitInfo(tb, []string{"cluster", "info"}, deadline, "cluster_state ok", func(info string) bool {
			return strings.Contains(info, "cluster_state:ok")
		})
	}
	// And once every replica has its master's data: a replica that never
	// synced cannot take over (cluster-replica-validity-factor).
	for _, n := range c.Nodes[:masters] {
		n.waitReplicas(tb, deadline, replicas)
	}
	return c
}

// URL is a redis:// URL naming every node, as rueidis takes a cluster's
// seed addresses.
func (c *Cluster) URL() string {
	u := "redis://" + c.Nodes[0].Addr
	for i, n := range c.Nodes[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "addr=" + n.Addr
	}
	return u
}

// ReplicaOf is the node that replicates master, or nil.
func (c *Cluster) ReplicaOf(master *Server) *Server {
	out, err := master.CLI("info", "replication")
	if err != nil {
		return nil
	}
	for _, n := range c.Nodes {
		if strings.Contains(string(out), "port="+n.port()+",") {
			return n
		}
	}
	return nil
}

func (s *Server) port() string {
	_, port, _ := strings.Cut(s.Addr, ":")
	return port
}

// CLI runs redis-cli against the server with args (e.g. "cluster", "nodes")
// and returns what it printed: for the commands Do's one line does not
// cover.
func (s *Server) CLI(args ...string) ([]byte, error) {
	return exec.Command("redis-cli", append([]string{"-h", "127.0.0.1", "-p", s.port()}, args...)...).Output()
}

// Log is the tail of the server's log (the last n bytes), for a failing test to show.
func (s *Server) Log(n int) string {
	data, err := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	if err != nil {
		return err.Error()
	}
	return string(data[max(0, len(data)-n):])
}

// StartTLS launches a redis-server that also listens with TLS on TLSAddr
// (certificate and key files, and the CA that signs clients' certificates:
// tls-auth-clients optional); it stops when the test ends.
func StartTLS(tb testing.TB, caFile, certFile, keyFile string) *Server {
	tb.Helper()
	port, err := freePort()
	if err != nil {
		tb.Fatal(err)
	}
	tlsPort, err := freePort()
	if err != nil {
		tb.Fatal(err)
	}
	s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), TLSAddr: fmt.Sprintf("127.0.0.1:%d", tlsPort), dir: tb.TempDir(),
		extra: []string{"--tls-port", strconv.Itoa(tlsPort), "--tls-cert-file", certFile, "--tls-key-file", keyFile,
			"--tls-ca-cert-file", caFile, "--tls-auth-clients", "optional"}}
	if err := s.launch(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// StartReplica starts a replica of master and waits until it has synced.
func StartReplica(tb testing.TB, master *Server) *Server {
	tb.Helper()
	port, err := freePort()
	if err != nil {
		tb.Fatal(err)
	}
	r := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), dir: tb.TempDir(),
		extra: []string{"--replicaof", "127.0.0.1", master.port()}}
	if err := r.launch(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(r.Stop)
	master.waitReplicas(tb, time.Now().Add(10*time.Second), 1)
	return r
}

// waitReplicas waits until s has n replicas online and streaming. A master
// lists a replica online once its sync is done, but after a diskless sync it
// streams writes to it only from the replica's first acknowledgement, up to
// a second later; until then a WAIT cannot be answered. So this writes (a
// FUNCTION FLUSH: no key, so no slot, and nothing of the tests' to lose) and
// WAITs for it on the same connection until n replicas confirm it.
func (s *Server) waitReplicas(tb testing.TB, deadline time.Time, n int) {
	tb.Helper()
	s.waitInfo(tb, []string{"info", "replication"}, deadline, fmt.Sprintf("%d replicas online", n), func(info string) bool {
		return strings.Count(info, "state=online") >= n
	})
	for {
		cmd := exec.Command("redis-cli", "-h", "127.0.0.1", "-p", s.port())
		cmd.Stdin = strings.NewReader(fmt.Sprintf("FUNCTION FLUSH\nWAIT %d 1000\n", n))
		out, err := cmd.Output()
		lines := strings.Fields(string(out))
		if err == nil && len(lines) == 2 && lines[1] == strconv.Itoa(n) {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redis %s: %d replicas never confirmed a write: %q %v", s.Addr, n, out, err)
		}
	}
}

// waitInfo polls s with command (INFO or CLUSTER INFO) until ready says yes
// of its reply, or fails tb at the deadline saying what it waited for.
func (s *Server) waitInfo(tb testing.TB, command []string, deadline time.Time, what string, ready func(info string) bool) {
	tb.Helper()
	for {
		out, err := s.CLI(command...)
		if err == nil && ready(string(out)) {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redis %s: waited in vain for %s: %q %v", s.Addr, what, out, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Sentinels are a master, its replica and three Redis Sentinels watching
// them (quorum 2, a master down after 1 s), all owned by a test.
type Sentinels struct {
	Master, Replica *Server
	Watchers        []*Server // the sentinels
	Name            string    // the master set's name
}

// StartSentinels starts a master, a replica synced to it, and three
// sentinels monitoring them.
func StartSentinels(tb testing.TB) *Sentinels {
	tb.Helper()
	s := &Sentinels{Master: Start(tb), Name: "gmqmaster"}
	s.Replica = StartReplica(tb, s.Master)
	mport := s.Master.port()
	for range 3 {
		port, err := freePort()
		if err != nil {
			tb.Fatal(err)
		}
		dir := tb.TempDir()
		conf := filepath.Join(dir, "sentinel.conf")
		text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor %s 127.0.0.1 %s 2\n"+
			"sentinel down-after-milliseconds %s 1000\nsentinel failover-timeout %s 5000\n",
			port, dir, s.Name, mport, s.Name, s.Name)
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			tb.Fatal(err)
		}
		w := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), dir: dir, sentinelConf: conf}
		if err := w.launch(); err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(w.Stop)
		s.Watchers = append(s.Watchers, w)
	}
	return s
}

// URL is the redis:// URL of the sentinels, naming the master set.
func (s *Sentinels) URL() string {
	u := "redis://" + s.Watchers[0].Addr + "?master_set=" + s.Name
	for _, w := range s.Watchers[1:] {
		u += "&addr=" + w.Addr
	}
	return u
}

// freeClusterPort is a free port whose cluster bus port (the port + 10000,
// Redis's rule) is free too and below 65536: a node whose bus port is taken
// or out of range fails at start, which made cluster tests flake when two
// suites ran on one machine.
func freeClusterPort() (int, error) {
	for range 100 {
		port, err := freePort()
		if err != nil {
			return 0, err
		}
		if port+10000 > 65535 {
			continue
		}
		bus, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+10000))
		if err != nil {
			continue
		}
		bus.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no free port with a free cluster bus port after 100 tries")
}
