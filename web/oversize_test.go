package web_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// An oversized body is answered 413 in a way ordinary clients can read
// (issue 20): the broker used to answer a declared length over the limit
// without reading the body and close while the client was still sending,
// so Python's urllib saw a reset or a broken pipe instead (52 of 150 tries
// under load). Real clients, many tries, all at once: Python's urllib and
// PHP's HTTP streams (what clients/python and clients/php use) and curl
// (libcurl, as PHP's curl extension), with and without Expect:
// 100-continue. Every one must read the 413.
func TestOversizedBodyClientsRead413(t *testing.T) {
	b := broker(t) // max_body 1024: a push may be 70 KiB of JSON
	for name, require := range map[string]string{"python3": "GMQ_REQUIRE_PYTHON", "php": "GMQ_REQUIRE_PHP", "curl": "GMQ_REQUIRE_CURL"} {
		if _, err := exec.LookPath(name); err != nil {
			if os.Getenv(require) == "1" {
				t.Fatalf("%s is required (%s): %v", name, require, err)
			}
			t.Skipf("%s not installed", name)
		}
	}
	file := t.TempDir() + "/body.json"
	if err := os.WriteFile(file, []byte(`{"topic":"big","body":"`+strings.Repeat("x", 2_000_000)+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	type client struct {
		name string
		args []string
		want string
	}
	clients := []client{
		{"python3", []string{"testdata/oversize.py", b.URL, "3000000", "150", "10"}, `{"413": 150}`},
		{"python3", []string{"testdata/oversize.py", b.URL, "300000", "30", "3"}, `{"413": 30}`},
		{"php", []string{"testdata/oversize.php", b.URL, "3000000", "30"}, `{"413":30}`},
	}
	for i := range 30 {
		expect := "Expect:" // curl sends the body at once
		if i%2 == 0 {
			expect = "Expect: 100-continue" // curl waits for the server before sending it
		}
		clients = append(clients, client{"curl", []string{"-sS", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Content-Type: application/json",
			"-H", expect, "--data-binary", "@" + file, b.URL + "/api/v1/jobs"}, "413"})
	}
	var wg sync.WaitGroup
	got := make([]string, len(clients))
	for i, c := range clients {
		wg.Go(func() {
			out, err := exec.Command(c.name, c.args...).CombinedOutput()
			got[i] = strings.TrimSpace(string(out))
			if err != nil {
				got[i] += fmt.Sprintf(" (%v)", err)
			}
		})
	}
	wg.Wait()
	for i, c := range clients {
		if got[i] != c.want {
			t.Errorf("%s %s: %s, want %s", c.name, strings.Join(c.args, " "), got[i], c.want)
		}
	}
}
