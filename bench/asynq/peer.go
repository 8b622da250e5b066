package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/gmq/gmq/gmqbench"
	"github.com/hibiken/asynq"
)

// peerResult is one side's run of bench/peers.sh, printed as one line of
// JSON: N jobs enqueued, then the same N processed (taken and acked), each
// phase timed. bench/bullmq/peer.mjs prints the same fields. Redis's CPU
// and commands are read by peers.sh around the whole process; this
// process's own CPU over the two phases (CPUSeconds, user + system, the
// program's start left out) is the client side's.
type peerResult struct {
	Side          string  `json:"side"`
	Jobs          int     `json:"jobs"`
	Size          int     `json:"size"`
	Clients       int     `json:"clients"`
	Batch         int     `json:"batch"`
	EnqueueSecs   float64 `json:"enqueue_s"`
	EnqueueRate   float64 `json:"enqueue_per_s"`
	ProcessSecs   float64 `json:"process_s"`
	ProcessRate   float64 `json:"process_per_s"`
	CPUSeconds    float64 `json:"cpu_s"`
	LibraryDetail string  `json:"library"`
}

// peerRun is -peer: only enqueue n jobs then process them, on one side,
// and print a peerResult. Sides: "asynq" (its client, then a server with
// clients workers, on redisAddr's database db); "gmq-beanstalk" (gmq's
// beanstalkd port at beanstalkAddr: put, then reserve + delete);
// "gmq-http" (gmq's HTTP API at gmqURL: push, then pop + ack, batch jobs a
// request); "gmq-http-chained" (the same, but each ack also pops the next
// job, one request a job as BullMQ's worker completes one job and fetches
// the next in one call). The gmq sides use the clients of `gmq bench`
// (package gmqbench), without its third mode (the cycle), so that a run is N
// job lives and no more.
func peerRun(w io.Writer, side, redisAddr string, db int, beanstalkAddr, gmqURL string, n, clients, size, batch int) error {
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = 'x'
	}
	r := peerResult{Side: side, Jobs: n, Size: size, Clients: clients, Batch: 1}
	var enqueue, process float64
	cpu0, err := cpuSeconds()
	if err != nil {
		return err
	}
	switch side {
	case "asynq":
		r.LibraryDetail = "github.com/hibiken/asynq v0.26.0"
		opt := asynq.RedisClientOpt{Addr: redisAddr, DB: db}
		if enqueue, err = asynqEnqueue(opt, n, clients, payload); err != nil {
			return err
		}
		if process, err = asynqProcess(opt, n, clients); err != nil {
			return err
		}
	case "gmq-beanstalk", "gmq-http", "gmq-http-chained":
		var dial gmqbench.Dialer
		switch side {
		case "gmq-beanstalk":
			r.LibraryDetail = "go-beanstalk to gmq's beanstalkd port " + beanstalkAddr
			dial = gmqbench.Beanstalk(beanstalkAddr)
		case "gmq-http":
			r.LibraryDetail = "gmq's Go client to " + gmqURL
			dial = gmqbench.HTTP(gmqURL)
			r.Batch = max(batch, 1)
		default:
			r.LibraryDetail = "gmq's Go client to " + gmqURL + ", ack-and-pop"
			dial = gmqbench.HTTPChained(gmqURL)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		results, err := gmqbench.Run(ctx, side, dial, gmqbench.Options{Clients: clients, Jobs: n, Size: size, Batch: r.Batch,
			Modes: []string{"push", "pop+ack"}})
		if err != nil {
			return err
		}
		enqueue, process = results[0].Rate, results[1].Rate
	default:
		return fmt.Errorf("-peer %q: want asynq, gmq-beanstalk, gmq-http or gmq-http-chained", side)
	}
	r.EnqueueRate, r.ProcessRate = enqueue, process
	r.EnqueueSecs, r.ProcessSecs = float64(n)/enqueue, float64(n)/process
	cpu1, err := cpuSeconds()
	if err != nil {
		return err
	}
	r.CPUSeconds = cpu1 - cpu0
	return json.NewEncoder(w).Encode(r)
}

// cpuSeconds is this process's CPU time so far, user + system, all threads.
func cpuSeconds() (float64, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds(), nil
}
