// Command worker is a gmq worker for the tests to stop or kill mid-job: its
// handler prints "started <id> <attempt>", works for -work, then prints
// "done <id>". SIGINT or SIGTERM stop it gracefully (Work finishes the job in
// hand); it prints "stopped" when Work returns.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gmq/gmq/client"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8000", "gmq's HTTP address")
	token := flag.String("token", "", "gmq's [web] token")
	topic := flag.String("topic", "work", "topic to work on")
	work := flag.Duration("work", time.Minute, "how long each job takes")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := client.NewWithOptions(*url, client.Options{Token: *token})
	err := c.Work(ctx, []string{*topic}, func(ctx context.Context, j *client.Job) error {
		fmt.Printf("started %s %d\n", j.ID, j.Attempt)
		select {
		case <-time.After(*work):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		fmt.Printf("done %s\n", j.ID)
		return nil
	}, client.WorkOptions{Wait: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("stopped")
}
