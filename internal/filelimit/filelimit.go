// Package filelimit fits the broker's connection caps to the process's
// open-file limit: raising the soft limit to the hard one at start (Raise),
// the caps a default start takes (Fit), and the warning when caps set by
// hand cannot all be reached (Warning).
package filelimit

import "fmt"

// fileReserve is the open files the broker needs besides its clients'
// connections: the listeners, Redis connections, standard streams.
const fileReserve = 100

// Fit is [server] max_connections = 0: as many connections per listener
// as the open-file limit fits, so that a default start neither warns nor
// lets connections wait in the kernel's backlog unanswered; unknown, a
// limit of 0 takes unfitted.
func Fit(limit uint64, listeners, unfitted int) int {
	if limit == 0 {
		return unfitted
	}
	return int(max((int64(limit)-fileReserve)/int64(max(listeners, 1)), 1))
}

// Warning says, if the connection caps cannot all be reached within
// the open-file limit, what to change; "" if they fit or the limit is not
// known (0). Past the limit new connections fail to be accepted (and are
// retried, see internal/tcpserver) before [server] max_connections refuses
// them with a reason.
func Warning(limit uint64, listeners, maxConns int) string {
	need := uint64(listeners)*uint64(maxConns) + fileReserve
	if limit == 0 || need <= limit {
		return ""
	}
	fit := max((int64(limit)-fileReserve)/int64(listeners), 1)
	return fmt.Sprintf("[server] max_connections = %d on %d listeners needs about %d open files, but this process may open %d: "+
		"past that, new connections wait instead of being refused with a reason; set [server] max_connections = %d or less, "+
		"or raise the limit (ulimit -n, systemd's LimitNOFILE)", maxConns, listeners, need, limit, fit)
}
