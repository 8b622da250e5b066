package gmqbench

import (
	"fmt"
	"io"
	"slices"
	"sync/atomic"
	"time"
)

// progressEvery is how often a run that is not on a terminal says how far
// it is: often enough that a log shows it is alive, seldom enough to read.
const progressEvery = 5 * time.Second

// progress shows how far a mode is on w (nil: nowhere) until the returned
// func is called. On a terminal (bar) it is one line redrawn in place five
// times a second; otherwise (a log, a pipe) a line when the mode starts,
// one every every (0: progressEvery) with the rate so far, and one when it
// ends: a long run never looks hung, and no \r garbles a log. total may be
// an estimate (the delay mode's): the total shown grows to the count.
func progress(w io.Writer, bar bool, every time.Duration, label string, done *atomic.Int64, total int) (stop func()) {
	if w == nil {
		return func() {}
	}
	if every <= 0 {
		every = progressEvery
	}
	start := time.Now()
	draw := func(last bool) {
		n := done.Load()
		total := max(int64(total), n) // an estimate (the delay mode's) may be passed
		switch {
		case bar:
			filled := int(30 * n / max(total, 1))
			fmt.Fprintf(w, "\r%-40s [%-30s] %d/%d", label, string(slices.Repeat([]byte("#"), filled)), n, total)
			if last {
				fmt.Fprintln(w)
			}
		case last:
			fmt.Fprintf(w, "gmq bench: %s: %d/%d jobs in %.1f s\n", label, n, total, time.Since(start).Seconds())
		default:
			fmt.Fprintf(w, "gmq bench: %s: %d/%d jobs, %.0f/s so far\n", label, n, total, float64(n)/time.Since(start).Seconds())
		}
	}
	if !bar {
		fmt.Fprintf(w, "gmq bench: %s: %d jobs…\n", label, total)
	} else {
		every = 200 * time.Millisecond
	}
	quit, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				draw(true)
				return
			case <-tick.C:
				draw(false)
			}
		}
	}()
	return func() { close(quit); <-finished }
}
