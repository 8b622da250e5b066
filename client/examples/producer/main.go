// Command producer pushes jobs to gmq over HTTP:
//
//	go run github.com/gmq/gmq/client/examples/producer -url http://127.0.0.1:8000 -topic mail -n 10
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
	topic := flag.String("topic", "mail", "topic to push to")
	n := flag.Int("n", 10, "how many jobs")
	token := flag.String("token", os.Getenv("GMQ_TOKEN"), "gmq's [web] token, if it has one")
	flag.Parse()
	c := client.NewWithOptions(*base, client.Options{Token: *token})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// One by one, then the rest as one batch.
	half := *n / 2
	for i := range half {
		p, err := c.Push(ctx, client.Job{Topic: *topic, Body: fmt.Sprintf("job %d", i), TTR: 30})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("pushed", p.ID)
	}
	var batch []client.Job
	for i := half; i < *n; i++ {
		batch = append(batch, client.Job{Topic: *topic, Body: fmt.Sprintf("job %d", i), TTR: 30})
	}
	if len(batch) > 0 {
		ids, err := c.PushBatch(ctx, batch)
		if err != nil {
			log.Fatal(err)
		}
		for _, id := range ids {
			fmt.Println("pushed", id)
		}
	}
}
