package pool

import (
	"strings"
	"testing"
)

// Data written before fanout placed "a+b" by its whole name: an empty such
// topic is forgotten at start, one holding jobs stops the start.
func TestPlacementOfOldPlusTopics(t *testing.T) {
	p, ctx := newPool(t)
	name := ""
	for _, n := range []string{"x+y", "x+z", "orders+audit", "a+b", "q+1"} {
		if p.keys.hash(n) != p.keys.bucketOf(n) {
			name = n
			break
		}
	}
	if name == "" {
		t.Fatal("every candidate hashes to its parent's bucket: pick other names")
	}
	c := p.client
	old := p.keys.hash(name)
	ready := p.keys.tag(old) + ":ready:" + name
	for _, cmd := range [][]string{
		{"HDEL", p.keys.meta(), "placement"},
		{"SADD", p.keys.topics(old), name},
		{"ZADD", ready, "1", "0000000000000001"},
	} {
		if err := c.Do(ctx, c.B().Arbitrary(cmd...).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Init(ctx); err == nil || !strings.Contains(err.Error(), name+" (1 jobs)") {
		t.Fatalf("init with jobs under the old placement: %v", err)
	}
	if err := c.Do(ctx, c.B().Del().Key(ready).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := p.Init(ctx); err != nil {
		t.Fatalf("init with an empty old topic: %v", err)
	}
	if known, _ := c.Do(ctx, c.B().Sismember().Key(p.keys.topics(old)).Member(name).Build()).AsBool(); known {
		t.Fatal("the empty old topic is still listed in its old bucket")
	}
	if got, _ := c.Do(ctx, c.B().Hget().Key(p.keys.meta()).Field("placement").Build()).ToString(); got != placementParent {
		t.Fatalf("placement recorded as %q", got)
	}
}
