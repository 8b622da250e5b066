package gmqbench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// dropWait bounds the deletion of a run's topics, which runs after the run
// (a Ctrl-C's too) on a context of its own.
const dropWait = 10 * time.Second

// drop deletes topics with del (nil: kept), and notes on w (nil: nowhere)
// the topics it could not delete and why.
func drop(ctx context.Context, del func(context.Context, []string) error, w io.Writer, topics []string) {
	if del == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dropWait)
	defer cancel()
	if err := del(ctx, topics); err != nil && w != nil {
		fmt.Fprintf(w, "gmq bench: the run's topics (%s) are left: %v (a beanstalkd frees its own tubes; "+
			"for gmq give --api URL, or DELETE /api/v1/topics/T)\n", strings.Join(topics, ", "), err)
	}
}

// DropOverHTTP deletes topics through gmq's HTTP API at baseURL
// (DELETE /api/v1/topics/T: a topic's jobs, counters and pause), with token
// as its bearer token when not empty. A topic the broker does not know (404:
// the run went to another broker, or to beanstalkd) is no failure.
func DropOverHTTP(baseURL, token string) func(ctx context.Context, topics []string) error {
	return func(ctx context.Context, topics []string) error {
		for _, t := range topics {
			req, err := http.NewRequestWithContext(ctx, "DELETE", strings.TrimSuffix(baseURL, "/")+"/api/v1/topics/"+url.PathEscape(t), nil)
			if err != nil {
				return err
			}
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 512)) // only for the message
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNotFound {
				return fmt.Errorf("DELETE %s: %s %s", req.URL.Path, resp.Status, strings.TrimSpace(string(body)))
			}
		}
		return nil
	}
}
