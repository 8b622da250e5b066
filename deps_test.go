package main

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/pool"
)

// formatFourCommit is the last commit whose broker reads store formats up
// to 4: it knows no job that waits for others.
const formatFourCommit = "3e2fcb74a3c19b710a77b4458b39b07265f722d8"

// A job pushed after others, over HTTP, waits until they complete (one
// named by its client id, one by its number), then runs with their
// results; a push naming a job that is not there, or a bad policy, is
// refused with the reason.
func TestDependenciesOverHTTP(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	b := startBroker(t, srv.URL())
	b.must(201, "POST", "/api/v1/jobs", `{"id":"extract","topic":"etl-extract","body":"x","ttr":60}`)
	second := b.must(201, "POST", "/api/v1/jobs", `{"topic":"etl-clean","body":"y","ttr":60}`)["id"].(string)
	load := b.must(201, "POST", "/api/v1/jobs", `{"topic":"etl-load","body":"z","ttr":60,"after":["extract",`+second+`],"with_results":true}`)["id"].(string)
	if v := b.must(200, "GET", "/api/v1/jobs/"+load, ``); v["state"] != "waiting" || len(v["waiting_for"].([]any)) != 2 {
		t.Fatalf("the dependent: %v, want waiting for two", v)
	}
	b.must(204, "GET", "/api/v1/pop?topic=etl-load&timeout=0", ``)
	for _, topic := range []string{"etl-extract", "etl-clean"} {
		j := b.must(200, "GET", "/api/v1/pop?topic="+topic+"&timeout=30", ``)
		b.must(200, "POST", "/api/v1/jobs/"+j["id"].(string)+"/ack", `{"result":{"from":"`+topic+`"}}`)
	}
	j := b.must(200, "GET", "/api/v1/pop?topic=etl-load&timeout=30", ``)
	if j["id"] != load {
		t.Fatalf("popped %v, want the dependent %s", j, load)
	}
	v := b.must(200, "GET", "/api/v1/jobs/"+load, ``)
	results, _ := v["dependency_results"].(map[string]any)
	if r, _ := results[second].(map[string]any); r["from"] != "etl-clean" || len(results) != 2 {
		t.Fatalf("its dependencies' results: %v", v)
	}
	for _, tc := range []struct{ body, says string }{
		{`{"topic":"etl-load","body":"z","after":["no-such-job"]}`, "not found"},
		{`{"topic":"etl-load","body":"z","after":[99999999999]}`, "not found"},
		{`{"topic":"etl-load","body":"z","after":["extract"],"on_dependency_failure":"retry"}`, "on_dependency_failure"},
		{`{"topic":"etl-load","body":"z","after":[]}`, "after"},
		{`{"topic":"etl-load","body":"z","with_results":true}`, "go with after"},
	} {
		got, err := b.do("POST", "/api/v1/jobs", tc.body)
		if err != nil || got.code/100 != 4 || got.code == 404 || got.code == 409 || !strings.Contains(fmt.Sprint(got.body["error"]), tc.says) {
			t.Errorf("push %s: %d %v %v, want a 4xx saying %q", tc.body, got.code, got.body, err, tc.says)
		}
	}
}

// A dependency that dies cancels its dependent, which shows why; with
// on_dependency_failure "run" the dependent runs anyway.
func TestDependencyDiesOverHTTP(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	b := startBroker(t, srv.URL())
	a := b.must(201, "POST", "/api/v1/jobs", `{"topic":"die-a","body":"x","ttr":60,"retry":{"max_attempts":1}}`)["id"].(string)
	cancelled := b.must(201, "POST", "/api/v1/jobs", `{"topic":"die-d","body":"y","ttr":60,"keep_completed":600,"after":[`+a+`]}`)["id"].(string)
	runs := b.must(201, "POST", "/api/v1/jobs", `{"topic":"die-r","body":"z","ttr":60,"after":[`+a+`],"on_dependency_failure":"run"}`)["id"].(string)
	j := b.must(200, "GET", "/api/v1/pop?topic=die-a&timeout=30", ``)
	b.must(200, "POST", "/api/v1/jobs/"+j["id"].(string)+"/fail", `{"error":"boom"}`)
	if j := b.must(200, "GET", "/api/v1/pop?topic=die-r&timeout=30", ``); j["id"] != runs {
		t.Fatalf("popped %v, want %s, which runs anyway", j, runs)
	}
	var v map[string]any
	waitUntil(t, "the dependent cancelled", func() bool {
		v = b.must(200, "GET", "/api/v1/jobs/"+cancelled, ``)
		return v["state"] == "cancelled"
	})
	if !strings.Contains(fmt.Sprint(v["last_error"]), "dependency "+a+" dead") {
		t.Fatalf("the cancelled dependent: %v, want it to say why", v)
	}
	got, err := b.do("POST", "/api/v1/jobs", `{"topic":"die-d","body":"late","after":[`+a+`]}`)
	if err != nil || got.code != 409 || !strings.Contains(fmt.Sprint(got.body["error"]), "dead") {
		t.Fatalf("a push after a dead job: %d %v %v, want 409 saying it is dead", got.code, got.body, err)
	}
}

// Two versions of the broker on one Redis: while a format 4 broker runs, a
// push with after is refused (503, naming the format), since that broker
// would end a dependency without telling its dependent. Once it stops, the
// store is raised (to the newest format) and the same push waits and runs.
func TestDependenciesWaitForTheStoreFormat(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an older broker")
	}
	t.Parallel()
	old := buildAt(t, formatFourCommit)
	srv := redistest.Start(t)
	a := startBrokerOf(t, srv.URL(), old)
	b := startBroker(t, srv.URL())
	format := metaField(t, srv.URL(), "format")
	if f := format(); f != "4" {
		t.Fatalf("with a format 4 broker running, the store is at format %q", f)
	}
	b.must(201, "POST", "/api/v1/jobs", `{"id":"up-first","topic":"up","body":"x","ttr":600}`)
	push := `{"topic":"up-next","body":"after up-first","after":["up-first"]}`
	refused := b.must(503, "POST", "/api/v1/jobs", push)
	if msg := fmt.Sprint(refused["error"]); !strings.Contains(msg, "format 5") {
		t.Fatalf("a push with after beside a format 4 broker: %v, want it to name the format", refused)
	}
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	a.exitsCleanly(t, time.Minute, "SIGTERM")
	waitUntil(t, "the store raised to the newest format", func() bool { return format() == strconv.Itoa(pool.StoreFormat) })
	var id string
	waitUntil(t, "the broker writes format 5 (its next announce) and takes the push", func() bool {
		got, err := b.do("POST", "/api/v1/jobs", push)
		id, _ = got.body["id"].(string)
		return err == nil && got.code == 201
	})
	j := b.must(200, "GET", "/api/v1/pop?topic=up&timeout=30", ``)
	b.must(200, "POST", "/api/v1/jobs/"+j["id"].(string)+"/ack", ``)
	if next := b.must(200, "GET", "/api/v1/pop?topic=up-next&timeout=30", ``); next["id"] != id {
		t.Fatalf("the dependent: %v, want %s", next, id)
	}
}
