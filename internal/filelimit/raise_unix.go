//go:build unix

package filelimit

import (
	"fmt"
	"syscall"
)

// Raise raises the soft limit on open files to the hard limit and
// returns it. Go's os package does the same at start since Go 1.19; doing it
// here makes it explicit and gives the number the caps are checked against.
func Raise() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("read the open-file limit: %w", err)
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return 0, fmt.Errorf("raise the open-file limit to %d: %w", lim.Max, err)
		}
	}
	return lim.Cur, nil
}
