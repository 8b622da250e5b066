package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// statusCmd reads or sets the server status of every broker sharing a
// Redis, through a broker's HTTP API: gmq status [--url URL] [--token T] [STATUS].
func statusCmd(args []string, out io.Writer) error {
	flags := flag.NewFlagSet("status", flag.ContinueOnError)
	url := flags.String("url", envOr("GMQ_URL", "http://127.0.0.1:8000"), "the broker's HTTP API (env GMQ_URL)")
	token := flags.String("token", os.Getenv("GMQ_TOKEN"), "the API token, if the broker has one (env GMQ_TOKEN)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	method, body := http.MethodGet, ""
	switch flags.NArg() {
	case 0:
	case 1:
		method = http.MethodPut
		data, _ := json.Marshal(map[string]string{"status": flags.Arg(0)}) // a map of strings always marshals
		body = string(data)
	default:
		return errors.New("usage: gmq status [--url URL] [--token T] [up|writeavoid|readonly|quiescent]")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(*url, "/")+"/api/v1/status", bytes.NewBufferString(body))
	if err != nil {
		return err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if *token != "" {
		req.Header.Set("Authorization", "Bearer "+*token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var answer struct{ Status, Error string }
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&answer); err != nil {
		return fmt.Errorf("%s: %s, not JSON: %w", req.URL, resp.Status, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, answer.Error)
	}
	_, err = fmt.Fprintln(out, answer.Status)
	return err
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
