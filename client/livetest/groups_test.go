package livetest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/client"
)

// Fair groups: jobs pushed with a Group (one by one and in a batch) are
// popped with it, a grouped topic's pops take the groups in turn (priority
// orders a group's own jobs), Get shows the group, a job without one shows
// none, and a bad group is a 400 naming "group".
func TestGoClientGroups(t *testing.T) {
	b := broker(t)
	c := client.New(b.URL, nil)
	ctx := context.Background()

	// tenant-a has three jobs, tenant-b two: the pops go a, b, a, b, a.
	for _, j := range []client.Job{
		{ID: "a-low", Body: "a3", Priority: client.Priority(30), Group: "tenant-a"},
		{ID: "a-high", Body: "a1", Priority: client.Priority(10), Group: "tenant-a"},
		{ID: "b-1", Body: "b1", Priority: client.Priority(50), Group: "tenant-b"},
	} {
		j.Topic = "reports"
		if _, err := c.Push(ctx, j); err != nil {
			t.Fatalf("push %s: %v", j.ID, err)
		}
	}
	if _, err := c.PushBatch(ctx, []client.Job{
		{ID: "a-mid", Topic: "reports", Body: "a2", Priority: client.Priority(20), Group: "tenant-a"},
		{ID: "b-2", Topic: "reports", Body: "b2", Priority: client.Priority(60), Group: "tenant-b"},
	}); err != nil {
		t.Fatal(err)
	}
	if j, err := c.Get(ctx, "b-2"); err != nil || j.Group != "tenant-b" || j.State != "ready" {
		t.Fatalf("get b-2: %+v %v", j, err)
	}
	var got []string
	for range 5 {
		j, err := c.Pop(ctx, []string{"reports"}, time.Second)
		if err != nil || j == nil {
			t.Fatalf("pop %d: %+v %v", len(got), j, err)
		}
		got = append(got, j.Group+"/"+j.Body)
	}
	if want := "tenant-a/a1 tenant-b/b1 tenant-a/a2 tenant-b/b2 tenant-a/a3"; strings.Join(got, " ") != want {
		t.Fatalf("popped %s, want %s", strings.Join(got, " "), want)
	}

	// PopMany's jobs carry their groups too; a job without one has none.
	if _, err := c.PushBatch(ctx, []client.Job{
		{Topic: "mail", Body: "x", Group: "tenant-é"}, {Topic: "mail", Body: "y"},
	}); err != nil {
		t.Fatal(err)
	}
	jobs, err := c.PopMany(ctx, []string{"mail"}, 2, time.Second)
	if err != nil || len(jobs) != 2 {
		t.Fatalf("pop many: %+v %v", jobs, err)
	}
	groups := map[string]string{}
	for _, j := range jobs {
		groups[j.Body] = j.Group
	}
	if groups["x"] != "tenant-é" || groups["y"] != "" {
		t.Fatalf("popped groups %q, want x in tenant-é and y in none", groups)
	}

	// A bad group is a 400 that names it, one by one or in a batch; a
	// group of 200 bytes is good.
	for name, g := range map[string]string{
		"201 bytes":           strings.Repeat("g", 201),
		"a control character": "tenant\n42",
		"DEL":                 "tenant\x7f",
	} { // (encoding/json sends bad UTF-8 as U+FFFD: the broker never sees it)
		_, err := c.Push(ctx, client.Job{Topic: "mail", Body: "x", Group: g})
		var e *client.Error
		if !errors.As(err, &e) || e.Status != 400 || !strings.Contains(e.Message, "group") {
			t.Errorf("a group of %s: %v, want a 400 naming group", name, err)
		}
	}
	if _, err := c.PushBatch(ctx, []client.Job{{Topic: "mail", Body: "x"}, {Topic: "mail", Body: "y", Group: strings.Repeat("g", 201)}}); status(err) != 400 {
		t.Errorf("a batch with a group of 201 bytes: %v, want a 400", err)
	}
	long := strings.Repeat("g", 200)
	p, err := c.Push(ctx, client.Job{Topic: "long", Body: "x", Group: long})
	if err != nil {
		t.Fatalf("a group of 200 bytes: %v", err)
	}
	if j, err := c.Get(ctx, p.ID); err != nil || j.Group != long {
		t.Fatalf("get the job of a 200-byte group: %+v %v", j, err)
	}
}
