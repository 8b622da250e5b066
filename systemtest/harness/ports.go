package harness

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Ports for what the tests start as processes on fixed addresses: brokers
// above all, which a test kills and starts again on the same ports.
//
// A port the kernel picks (port 0) will not do: a killed broker's ports
// are free from the kill until its restart listens again (seconds, for a
// race-detecting build on a loaded machine), and anything may take one
// meanwhile; the restart then exits with "address already in use" while
// the stranger answers on the port. So a port here is
//   - from below the kernel's ephemeral range (ip_local_port_range): no
//     listener on port 0 and no outgoing connection on the machine is
//     ever given one;
//   - claimed for as long as its test runs, by an flock on a file named
//     after it in a directory every gmq test process shares
//     (os.TempDir()/gmq-test-ports), so no test of this binary, of
//     another package's binary or of another checkout's run picks a port
//     a test holds, even while nothing listens on it (a killed broker's).
//     The kernel drops a lock with the process that held it, so a run that
//     crashed leaves no claim behind (the files stay, unlocked: at most
//     one a port of the range, empty; removing one would race a claim);
//   - free when it is claimed (another program may listen on it).
//
// What is left, a program outside these tests binding a claimed port while
// its broker is down, makes the restart fail at once with the broker's log:
// startOrTaken checks that the process listening on each port is the
// broker it started.

// portRange is where FreeAddr picks ports: [lo, hi).
var portRange = sync.OnceValues(func() (lo, hi int) {
	eLo, eHi := 32768, 60999 // Linux's default ephemeral range
	if data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(data)); len(f) == 2 {
			a, errA := strconv.Atoi(f[0])
			b, errB := strconv.Atoi(f[1])
			if errA == nil && errB == nil {
				eLo, eHi = a, b
			}
		}
	}
	const floor, enough = 10000, 4000 // well-known services' ports lie below 10000
	switch {
	case eLo-floor >= enough:
		return floor, eLo
	case 65536-(eHi+1) >= enough:
		return eHi + 1, 65536
	default: // an ephemeral range over nearly everything: the claims still hold among the tests
		return floor, 65536
	}
})

// portClaims is the directory of the claims' files.
var portClaims = filepath.Join(os.TempDir(), "gmq-test-ports")

var errClaimed = errors.New("claimed by another test")

// claimPort claims port for the caller until it closes the returned file;
// errClaimed says a test (of any process) holds it.
func claimPort(port int) (*os.File, error) {
	if err := os.MkdirAll(portClaims, 0o777); err != nil {
		return nil, fmt.Errorf("claim port %d: %w", port, err)
	}
	// os.OpenFile opens with O_CLOEXEC: the processes a test starts do not
	// inherit the lock and keep it past the test.
	f, err := os.OpenFile(filepath.Join(portClaims, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, fmt.Errorf("claim port %d: %w", port, err)
	}
	// Each open is its own lock holder (flock(2)), so a second claim in
	// this process fails as one from another would.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errClaimed
		}
		return nil, fmt.Errorf("claim port %d: %w", port, err)
	}
	return f, nil
}

// FreeAddr claims a free 127.0.0.1 port for t (see above) until t ends.
func FreeAddr(t testing.TB) string {
	t.Helper()
	lo, hi := portRange()
	for range 1000 {
		port := lo + rand.IntN(hi-lo)
		claim, err := claimPort(port)
		if errors.Is(err, errClaimed) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		l, err := net.Listen("tcp", addr)
		if err != nil { // a program outside the tests listens on it
			claim.Close()
			continue
		}
		l.Close()
		t.Cleanup(func() { claim.Close() })
		return addr
	}
	t.Fatalf("no free port in [%d, %d) after 1000 tries", lo, hi)
	return ""
}

// notListening is those of addrs (127.0.0.1:port) on which process pid
// holds no listening socket: a socket's inode in /proc/net/tcp's LISTEN
// entries must be one of the process's open files. An answer on the port
// proves only that something listens there.
func notListening(pid int, addrs []string) ([]string, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, fmt.Errorf("the broker's open files: %w", err)
	}
	owned := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			owned[strings.TrimSuffix(inode, "]")] = true
		}
	}
	table, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return nil, fmt.Errorf("the listening sockets: %w", err)
	}
	listening := map[string]string{} // local address as /proc/net/tcp writes it -> inode
	for _, line := range strings.Split(string(table), "\n") {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		if f := strings.Fields(line); len(f) >= 10 && f[3] == "0A" { // TCP_LISTEN
			listening[f[1]] = f[9]
		}
	}
	var missing []string
	for _, addr := range addrs {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil || !ap.Addr().Is4() {
			return nil, fmt.Errorf("not an IPv4 address and port: %q", addr)
		}
		ip := ap.Addr().As4() // written as the 32-bit number in memory, little-endian
		key := fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], ap.Port())
		if inode, ok := listening[key]; !ok || !owned[inode] {
			missing = append(missing, addr)
		}
	}
	return missing, nil
}
