package pool

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/lua"
)

// batch.lua's short path (lib_lean.lua) answers and writes as its general
// path does. Two pools on one Redis, under prefixes of their own, run the
// same random calls of pushes, deletes and pops on plain topics, each
// operation built as the pool builds it; every call of the second carries
// one more operation, a peek of an empty topic, which the short path does
// not take, so the second's calls all go the general way. After each call
// the replies agree, and at the end every key of the two stores does
// (times aside: the two run a few milliseconds apart).
func TestShortPathAgreesWithGeneral(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			redis.Flush(t)
			short, ctx := prefixedPool(t, "s")
			general, _ := prefixedPool(t, "g")
			b := short.keys.bucketOf("a")
			topics := sameBucket(short, b, 4) // three for jobs, the last left empty
			rng := rand.New(rand.NewPCG(seed, 32))
			var members []string // every member pushed (or tried)
			for call := range 300 {
				var ops []*op
				for range 1 + rng.IntN(6) {
					ops = append(ops, randomOp(rng, topics[:3], &members))
				}
				got := runOps(ctx, short, b, ops)
				want := runOps(ctx, general, b, append(cloneOps(ops), peekOp(topics[3])))
				for i := range got {
					if g, w := normalReply(t, got[i]), normalReply(t, want[i]); g != w {
						t.Fatalf("call %d, operation %d (%s %v): short path %s, general %s", call, i, ops[i].kind, ops[i].args, g, w)
					}
				}
			}
			if g, w := storeDump(t, ctx, short, "s"), storeDump(t, ctx, general, "g"); g != w {
				t.Fatalf("the stores differ:\nshort path:\n%s\ngeneral:\n%s", g, w)
			}
		})
	}
}

// prefixedPool is a pool of the test Redis under prefix (not flushed).
func prefixedPool(t *testing.T, prefix string) (*Pool, context.Context) {
	t.Helper()
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{redis.Addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	p := New(client, withDefaults(Options{Prefix: prefix, Origin: "test", Buckets: 4, TickBatch: 10}))
	ctx := context.Background()
	if err := p.Init(ctx); err != nil {
		t.Fatal(err)
	}
	return p, ctx
}

// sameBucket returns n topic names of bucket b.
func sameBucket(p *Pool, b, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		if name := "t" + strconv.Itoa(i); p.keys.bucketOf(name) == b {
			out = append(out, name)
		}
	}
	return out
}

// randomOp is a push (a new member, now and then one taken), a delete (of
// a member pushed, or not), a pop (of one topic or two), an ack then a pop
// (ack_pop), or a pop of several jobs, as the pool makes them.
func randomOp(rng *rand.Rand, topics []string, members *[]string) *op {
	topic := topics[rng.IntN(len(topics))]
	pick := func() string {
		if len(*members) == 0 || rng.IntN(10) == 0 {
			return member(uint64(900000 + rng.IntN(1000)))
		}
		return (*members)[rng.IntN(len(*members))]
	}
	switch r := rng.IntN(21); {
	case r < 8:
		m := member(uint64(len(*members) + 1))
		if len(*members) > 0 && rng.IntN(20) == 0 {
			m = pick()
		}
		*members = append(*members, m)
		body := strings.Repeat("b", []int{0, 5, 100, 5000}[rng.IntN(4)])
		return &op{kind: opPush, topics: []string{topic}, args: lua.OpArgs(opPush, "member", m,
			"priority", strconv.Itoa([]int{1, 5, 1024}[rng.IntN(3)]), "ttr", []string{"0", "60000", "60000"}[rng.IntN(3)],
			"delay", []string{"0", "0", "0", "60000"}[rng.IntN(4)], "body", body, "client_id", []string{"", "cid-" + m}[rng.IntN(2)],
			"expires", "0", "retry", "", "trace", "", "unique_key", "", "unique_mode", "", "unique_for", "0", "group", "",
			"schedule_key", "", "schedule_due", "", "schedule_next", "", "schedule_name", "", "overlap", "",
			"json", []string{"0", "1"}[rng.IntN(2)], "keep", []string{"", "", "0", "600"}[rng.IntN(4)],
			"timeout", []string{"", "30000"}[rng.IntN(2)], "then_list", "", "dead_list", "", "after", "", "batch", "")}
	case r < 13:
		return &op{kind: opDelete, topics: []string{topic}, args: lua.OpArgs(opDelete, "member", pick(),
			"attempt", strconv.Itoa(rng.IntN(3)), "mode", []string{"", "ack", "ack", "unreserved"}[rng.IntN(4)],
			"result", []string{"", `{"r":1}`}[rng.IntN(2)])}
	case r < 16:
		// One topic or two (the second a random one, maybe the same).
		mode, popped := []string{popFirst, "best", "take"}[rng.IntN(3)], []string{topic}
		if rng.IntN(2) == 0 {
			popped = append(popped, topics[rng.IntN(len(topics))])
		}
		return &op{kind: opPop, topics: popped, args: lua.OpArgs(opPop, "mode", mode, "more", []string{"0", "1"}[rng.IntN(2)])}
	case r < 18:
		return &op{kind: opAckPop, topics: []string{topic, topics[rng.IntN(len(topics))], topics[rng.IntN(len(topics))]},
			args: lua.OpArgs(opAckPop, "member", pick(), "attempt", strconv.Itoa(rng.IntN(3)), "more", []string{"0", "1"}[rng.IntN(2)],
				"result", []string{"", "[2]"}[rng.IntN(2)])}
	default:
		return &op{kind: opPopN, topics: []string{topic}, args: lua.OpArgs(opPopN,
			"mode", []string{popFirst, "best"}[rng.IntN(2)], "n", strconv.Itoa([]int{1, 2, 5}[rng.IntN(3)]),
			"more", []string{"0", "1"}[rng.IntN(2)])}
	}
}

// peekOp is a pop that only looks: the short path never takes it.
func peekOp(topic string) *op {
	return &op{kind: opPop, topics: []string{topic}, args: lua.OpArgs(opPop, "mode", "peek", "more", "0")}
}

func cloneOps(ops []*op) []*op {
	out := make([]*op, len(ops))
	for i, o := range ops {
		out[i] = &op{kind: o.kind, topics: o.topics, args: o.args}
	}
	return out
}

// runOps runs ops as one call of bucket b's batch and returns each reply
// (or its error).
func runOps(ctx context.Context, p *Pool, b int, ops []*op) [][]rueidis.RedisMessage {
	for _, o := range ops {
		o.ctx = ctx
	}
	p.batchers[b].run(ops)
	out := make([][]rueidis.RedisMessage, len(ops))
	for i, o := range ops {
		out[i] = o.reply
		if o.err != nil {
			out[i] = []rueidis.RedisMessage{}
		}
	}
	return out
}

// normalReply renders a reply with Redis's clock left out: a push's now
// (its due, as the delay), a popped job's now, and its record's times.
func normalReply(t *testing.T, r []rueidis.RedisMessage) string {
	t.Helper()
	var parts []string
	for _, m := range r {
		s, err := m.ToString()
		if err != nil {
			n, ierr := m.AsInt64()
			if ierr != nil {
				s = "nil"
			} else {
				s = strconv.FormatInt(n, 10)
			}
		}
		parts = append(parts, s)
	}
	if len(parts) == 4 && parts[0] == "OK" && len(r) == 4 && parts[3] == "1" { // a push: OK, now, due, kept
		now, _ := strconv.ParseInt(parts[1], 10, 64)
		if due, _ := strconv.ParseInt(parts[2], 10, 64); due > 0 {
			parts[2] = "+" + strconv.FormatInt(due-now, 10)
		}
		parts[1] = "now"
	} else if len(parts) == 4 && parts[0] == "OK" && parts[3] != "0" { // an ack kept: OK, client id, dropped, ms kept
		parts[3] = "kept" // a retried ack's is how long is left: the two run a few milliseconds apart
	}
	if len(parts) >= 4 && parts[0] == "OK" && (parts[3] == "OK" || parts[3] == "EMPTY") { // an ack_pop: OK, client id, dropped, then its pop's reply
		rest := make([]rueidis.RedisMessage, 0, len(r)-3)
		rest = append(rest, r[3:]...)
		return parts[0] + " | " + short(parts[1]) + " | " + parts[2] + " | " + normalReply(t, rest)
	}
	if len(parts) > 3 && parts[0] == "JOBS" { // a pop of several: JOBS, more, count, then each job's reply
		out := parts[:3]
		for at := 3; at+lua.ReplyLen <= len(parts); at += lua.ReplyLen {
			job := parts[at : at+lua.ReplyLen]
			out = append(out, job[0], short(job[1]), normalRecord(t, job[lua.ReplyRecord]))
		}
		return strings.Join(out, " | ")
	}
	record := ""
	if len(parts) == 2+lua.ReplyLen && parts[0] == "OK" { // a pop: OK, more, then the job reply
		parts[2+lua.ReplyNow] = "now"
		record = normalRecord(t, parts[2+lua.ReplyRecord])
		parts = parts[:2+lua.ReplyRecord]
	}
	for i, s := range parts {
		parts[i] = short(s)
	}
	return strings.Join(parts, " | ") + " " + record
}

// normalRecord renders a packed record with its times made relative to its creation.
func normalRecord(t *testing.T, packed string) string {
	t.Helper()
	r, err := decodeRecord(packed)
	if err != nil {
		t.Fatalf("record %q: %v", packed, err)
	}
	r.num[lua.FieldCreated] = 0
	for _, f := range []lua.Field{lua.FieldDue, lua.FieldEndedAt} {
		if r.num[f] > 0 {
			r.num[f] = 1 // a time: only whether there is one
		}
	}
	for i, s := range r.text {
		r.text[i] = strings.ReplaceAll(short(s), "|", "/")
	}
	return fmt.Sprintf("%v %q %v", r.num, r.text, r.has)
}

// short is s, or its length when it is long.
func short(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("<%d bytes>", len(s))
	}
	return s
}

// storeDump renders every key of a pool's store (its prefix left out), times aside.
func storeDump(t *testing.T, ctx context.Context, p *Pool, prefix string) string {
	t.Helper()
	keys, err := p.client.Do(ctx, p.client.B().Keys().Pattern(prefix+":*").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		name := strings.TrimPrefix(k, prefix+":")
		if strings.HasPrefix(name, "meta") || strings.HasPrefix(name, "ids") || strings.Contains(name, "status") {
			continue // the brokers' records and the id counters
		}
		typ, err := p.client.Do(ctx, p.client.B().Type().Key(k).Build()).ToString()
		if err != nil {
			t.Fatal(err)
		}
		var v string
		switch typ {
		case "hash":
			m, err := p.client.Do(ctx, p.client.B().Hgetall().Key(k).Build()).AsStrMap()
			if err != nil {
				t.Fatal(err)
			}
			var fields []string
			for f, val := range m {
				switch {
				case strings.HasSuffix(name, ":jobs"):
					val = normalRecord(t, val)
				case f == "created":
					val = "time"
				}
				fields = append(fields, f+"="+val)
			}
			slices.Sort(fields)
			v = strings.Join(fields, ", ")
		case "zset":
			z, err := p.client.Do(ctx, p.client.B().Zrange().Key(k).Min("0").Max("-1").Withscores().Build()).AsZScores()
			if err != nil {
				t.Fatal(err)
			}
			var entries []string
			for _, e := range z {
				if strings.Contains(name, ":ready:") {
					entries = append(entries, fmt.Sprintf("%s@%v", e.Member, e.Score))
				} else {
					entries = append(entries, e.Member) // a time: its member only
				}
			}
			slices.Sort(entries)
			v = strings.Join(entries, ", ")
		case "set":
			s, err := p.client.Do(ctx, p.client.B().Smembers().Key(k).Build()).AsStrSlice()
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(s)
			v = strings.Join(s, ", ")
		default:
			v = typ
		}
		out = append(out, name+": "+v)
	}
	return strings.Join(out, "\n")
}

// A topic that takes the short path leaves it at the next call once a
// feature is turned on, whichever broker turns it on: each call looks at
// the settings and the topic's state it reads anyway. Each case pushes to
// a plain topic, turns a feature on from a second pool (another broker),
// and checks that the first pool's next calls obey it.
func TestShortPathLeftAtOnce(t *testing.T) {
	spec := job.Spec{Topic: "t", Body: "x", TTR: time.Minute, Priority: job.DefaultPriority}
	for _, tc := range []struct {
		name  string
		turn  func(p *Pool, ctx context.Context) error
		check func(t *testing.T, p *Pool, ctx context.Context)
	}{
		{"max_items refuses the next push", func(p *Pool, ctx context.Context) error {
			return p.SetTopicConfig(ctx, "t", job.TopicConfig{"max_items": "1"})
		}, func(t *testing.T, p *Pool, ctx context.Context) {
			if _, err := p.Push(ctx, spec); !errors.Is(err, job.ErrFull) {
				t.Fatalf("push past max_items: %v, want ErrFull", err)
			}
		}},
		{"a pause holds the next pop", func(p *Pool, ctx context.Context) error {
			_, err := p.Pause(ctx, "t", PauseParams{For: time.Hour})
			return err
		}, func(t *testing.T, p *Pool, ctx context.Context) {
			got, err := p.Pop(ctx, []string{"t"})
			if err != nil || got.Job != nil || got.PauseWait <= 0 {
				t.Fatalf("pop of a paused topic: %+v %v, want none and a wait", got, err)
			}
		}},
		{"max_reserved holds the second pop", func(p *Pool, ctx context.Context) error {
			if _, err := p.Push(ctx, spec); err != nil {
				return err
			}
			return p.SetTopicConfig(ctx, "t", job.TopicConfig{"max_reserved": "1"})
		}, func(t *testing.T, p *Pool, ctx context.Context) {
			if got, err := p.Pop(ctx, []string{"t"}); err != nil || got.Job == nil {
				t.Fatalf("first pop: %+v %v", got, err)
			}
			got, err := p.Pop(ctx, []string{"t"})
			if err != nil || got.Job != nil || got.HeldBy != "t" {
				t.Fatalf("second pop under max_reserved 1: %+v %v, want none, held by t", got, err)
			}
		}},
		{"a grouped push makes the next plain pushes join group ''", func(p *Pool, ctx context.Context) error {
			g := spec
			g.Group = "g"
			_, err := p.Push(ctx, g)
			return err
		}, func(t *testing.T, p *Pool, ctx context.Context) {
			mustPush(t, p, ctx, spec)
			st, err := p.TopicStats(ctx, "t")
			if err != nil || st.Groups != 2 {
				t.Fatalf("groups %d %v, want 2 (g and '')", st.Groups, err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ctx := newPool(t)
			// another broker's pool, on the same store
			other, _ := openPool(t, rueidis.ClientOption{InitAddress: []string{redis.Addr}}, Options{})
			mustPush(t, p, ctx, spec) // on the short path
			if err := tc.turn(other, ctx); err != nil {
				t.Fatal(err)
			}
			tc.check(t, p, ctx)
			if problems, err := p.Check(ctx); err != nil || len(problems) > 0 {
				t.Fatalf("check: %v %v", problems, err)
			}
		})
	}
}
