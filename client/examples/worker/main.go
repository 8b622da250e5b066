// Command worker sends the mails pushed to gmq's "mail" topic, four at a
// time, until SIGINT or SIGTERM. GMQ_URL is gmq's address, GMQ_TOKEN its
// [web] token, if it has one.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/gmq/gmq/client"
)

func main() {
	url := os.Getenv("GMQ_URL")
	if url == "" {
		url = "http://127.0.0.1:8000"
	}
	c := client.NewWithOptions(url, client.Options{Token: os.Getenv("GMQ_TOKEN")})

	// Ctrl-C or SIGTERM: pop no more, finish the jobs in hand, return.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	err := c.Work(ctx, []string{"mail"}, send, client.WorkOptions{Concurrency: 4})
	if err != nil {
		log.Fatal(err)
	}
	log.Print("stopped")
}

// send does one job. Returning nil acks it; an error fails it, to be tried
// again after its retry policy's backoff, or to go to the dead set.
func send(ctx context.Context, j *client.Job) error {
	to := j.Body
	if j.BodyJSON { // pushed as a JSON object: {"to": "..."}
		var mail struct {
			To string `json:"to"`
		}
		if err := json.Unmarshal([]byte(j.Body), &mail); err != nil {
			return err
		}
		to = mail.To
	}
	log.Printf("sending %s (attempt %d) to %s", j.ID, j.Attempt, to)
	if to == "" {
		return errors.New("no recipient")
	}
	// Send the mail here, bounded by ctx (its deadline, if you set one).
	return nil
}
