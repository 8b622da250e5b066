package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Every request names the client and its version: gmq-client-go/Version.
func TestVersionInUserAgent(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("User-Agent")
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	if err := New(srv.URL, nil).Touch(context.Background(), "1", 1); err != nil {
		t.Fatal(err)
	}
	if ua := <-got; ua != "gmq-client-go/"+Version {
		t.Errorf("User-Agent %q, want gmq-client-go/%s", ua, Version)
	}
}
