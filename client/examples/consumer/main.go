// Command consumer pops jobs from gmq over HTTP (long polling), works on them
// and acks them; it stops after -n jobs, or when none came for -idle:
//
//	go run github.com/gmq/gmq/client/examples/consumer -url http://127.0.0.1:8000 -topic mail -n 10
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/gmq/gmq/client"
)

func main() {
	base := flag.String("url", "http://127.0.0.1:8000", "gmq's HTTP address")
	topic := flag.String("topic", "mail", "topic to pop from")
	n := flag.Int("n", 10, "stop after this many jobs")
	idle := flag.Duration("idle", 5*time.Second, "stop when no job came for this long")
	token := flag.String("token", os.Getenv("GMQ_TOKEN"), "gmq's [web] token, if it has one")
	flag.Parse()
	c := client.NewWithOptions(*base, client.Options{Token: *token})
	ctx := context.Background()
	job, err := c.Pop(ctx, []string{*topic}, *idle)
	for done := 1; err == nil && job != nil; done++ {
		// Long work would touch the job before its TTR runs out; a job that
		// cannot be done now would be released, or buried to look at later.
		// The calls given the popped job send its delivery's token.
		if err := c.TouchJob(ctx, job); err != nil {
			log.Fatal(err)
		}
		if done == *n {
			if err := c.AckJob(ctx, job); err != nil {
				log.Fatal(err)
			}
			fmt.Printf("done %s: %s\n", job.ID, job.Body)
			return
		}
		// Ack this job and pop the next in one request.
		next, ackErr := c.AckJobAndPop(ctx, job, []string{*topic}, *idle)
		if ackErr != nil {
			log.Fatal(ackErr)
		}
		fmt.Printf("done %s: %s\n", job.ID, job.Body)
		job = next
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("no job for", *idle)
}
