package main

import (
	"fmt"

	"github.com/gmq/gmq/config"
)

// fileReserve is the open files the broker needs besides its clients'
// connections: the listeners, Redis connections, standard streams.
const fileReserve = 100

// fitConnections is [server] max_connections = 0: as many connections per
// listener as the open-file limit fits, so that a default start neither
// warns nor lets connections wait in the kernel's backlog unanswered.
func fitConnections(limit uint64, listeners int) int {
	if limit == 0 {
		return config.UnfittedMaxConnections
	}
	return int(max((int64(limit)-fileReserve)/int64(max(listeners, 1)), 1))
}

// fileLimitWarning says, if the connection caps cannot all be reached within
// the open-file limit, what to change; "" if they fit or the limit is not
// known (0). Past the limit new connections fail to be accepted (and are
// retried, see internal/tcpserver) before [server] max_connections refuses
// them with a reason.
func fileLimitWarning(limit uint64, listeners, maxConns int) string {
	need := uint64(listeners)*uint64(maxConns) + fileReserve
	if limit == 0 || need <= limit {
		return ""
	}
	fit := max((int64(limit)-fileReserve)/int64(listeners), 1)
	return fmt.Sprintf("[server] max_connections = %d on %d listeners needs about %d open files, but this process may open %d: "+
		"past that, new connections wait instead of being refused with a reason; set [server] max_connections = %d or less, "+
		"or raise the limit (ulimit -n, systemd's LimitNOFILE)", maxConns, listeners, need, limit, fit)
}
