package pool

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/lua"
)

// contractScript runs body after the scripts' contract (contract.lua), so
// that it reads keys and records by the names the scripts use.
func contractScript(body string) *rueidis.Lua {
	return rueidis.NewLuaScript("local SCRIPT_KEYS, SCRIPT_ARGV = KEYS, ARGV\n" + lua.ContractLua() +
		"\nbind(SCRIPT_KEYS, SCRIPT_ARGV)\n" + body)
}

// The keys Go passes are the ones the scripts' names mean: each name of
// lua.BucketKeys and lua.TopicKeys, read in Redis through contract.lua,
// is the key this table says it is.
func TestKeysFollowTheContract(t *testing.T) {
	p, ctx := newPool(t)
	k := p.keys
	b := k.bucketOf("kids+b")
	bk, tag := k.buckets[b], k.tag(b)
	wantBucket := map[string]string{"jobs": bk.jobs, "bodies": bk.bodies, "due": bk.due, "stats": bk.stats,
		"topics": bk.topics, "defaults": bk.defaults, "outbox": bk.outbox, "fanout": bk.fanout, "topic_index": bk.topicIndex, "events": bk.events,
		"followups": bk.followups, "followup_specs": bk.followupSpecs}
	wantTopic := map[string]string{"ready": tag + ":ready:kids+b", "delayed": tag + ":delayed:kids+b",
		"reserved": tag + ":reserved:kids+b", "buried": tag + ":buried:kids+b", "info": tag + ":topic:kids+b",
		"waiting": k.waiting("kids+b"), "config": k.config("kids+b"), "expires": tag + ":expires:kids+b",
		"parent_config": k.config("kids"), "dead": tag + ":dead:kids+b", "group_ring": tag + ":group_ring:kids+b",
		"group_jobs": tag + ":group_jobs:kids+b", "group_ready": tag + ":group_ready:kids+b", "group_state": tag + ":group_state:kids+b",
		"completed": tag + ":completed:kids+b", "cancelled": tag + ":cancelled:kids+b", "after": tag + ":after:kids+b"}
	var names []string
	for _, s := range lua.BucketKeys {
		names = append(names, "K_"+strings.ToUpper(s.Name))
	}
	for _, s := range lua.TopicKeys {
		names = append(names, "t."+s.Name)
	}
	// The topic is the call's second, so that its keys' offset is tested too.
	script := contractScript("local t = topic_keys(2, 'kids+b')\nreturn {" + strings.Join(names, ", ") + "}")
	got, err := script.Exec(ctx, p.client, k.withTopics(b, "kids", "kids+b"), nil).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(names) {
		t.Fatalf("the script named %d keys, want %d", len(got), len(names))
	}
	for i, s := range lua.BucketKeys {
		if want := wantBucket[s.Name]; got[i] != want {
			t.Errorf("K_%s is %q, want %q", strings.ToUpper(s.Name), got[i], want)
		}
	}
	for i, s := range lua.TopicKeys {
		if want := wantTopic[s.Name]; got[len(lua.BucketKeys)+i] != want {
			t.Errorf("t.%s is %q, want %q", s.Name, got[len(lua.BucketKeys)+i], want)
		}
	}
}

// A record the scripts wrote, read field by field through contract.lua's
// names, holds what Go reads in the job reply: push, pop, fail and pop
// again set every field.
func TestRecordFollowsTheContract(t *testing.T) {
	p, ctx := newPool(t)
	attempts := 5
	spec := job.Spec{Topic: "rec", Body: `{"n":"twelve bytes"}`, BodyJSON: true, ClientID: "order-7", Priority: 7, TTR: time.Minute,
		Expires: time.Now().Add(time.Hour), Retry: &job.RetryPolicy{MaxAttempts: &attempts, Backoff: "fixed", Base: time.Millisecond},
		TraceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", Group: "tenant-1",
		KeepCompleted: durationp(time.Minute), Timeout: 90 * time.Second}
	pushed, err := p.Push(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustPop(t, p, ctx, "rec"); got == nil {
		t.Fatal("nothing to pop")
	}
	if _, err := p.Fail(ctx, "order-7", 1, "boom"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // its 1 ms backoff, then the bucket's timer
	if _, _, err := p.Tick(ctx, p.BucketOf("rec"), "rec"); err != nil {
		t.Fatal(err)
	}
	j := mustPop(t, p, ctx, "rec")
	if j == nil {
		t.Fatal("nothing to pop after the fail")
	}
	ms := func(at time.Time) string { return strconv.FormatInt(at.UnixMilli(), 10) }
	want := map[lua.Field]string{
		lua.FieldState: strconv.Itoa(int(job.Reserved)), lua.FieldTopic: "rec", lua.FieldPriority: "7",
		lua.FieldTTR: "60000", lua.FieldDelay: "0", lua.FieldCreated: ms(j.Created), lua.FieldDue: ms(j.Due),
		lua.FieldReserves: "2", lua.FieldTimeouts: "0", lua.FieldReleases: "0", lua.FieldBuries: "0",
		lua.FieldKicks: "0", lua.FieldClientID: "order-7", lua.FieldSize: strconv.Itoa(len(spec.Body)),
		lua.FieldExpires: ms(j.Expires), lua.FieldFailures: "1", lua.FieldLastError: "boom", lua.FieldDeadAt: "0",
		lua.FieldRetry: spec.Retry.Encode(), lua.FieldTrace: spec.TraceParent, lua.FieldGroup: spec.Group,
		lua.FieldBodyJSON: "1", lua.FieldBody: spec.Body,
		lua.FieldKeep: "60", lua.FieldEndedAt: "nil", lua.FieldResult: "nil", // not completed (outcomes_test.go)
		lua.FieldWaited: "nil", lua.FieldCancel: "nil", lua.FieldProgress: "nil", lua.FieldLog: "nil", // endwait_test.go, cancel_test.go
		lua.FieldHistory: "nil", // jobhistory_test.go: "rec" keeps none
		lua.FieldTimeout: "90000",
		lua.FieldThen:    "nil", lua.FieldOnDead: "nil", // followups_test.go
		lua.FieldAfter: "nil", lua.FieldDependents: "nil", // deps_test.go
		lua.FieldBatch:  "nil",                                                      // batches_test.go
		lua.FieldErrors: fmt.Sprintf(`[[1,%d,"boom"]]`, j.Errors[0].At.UnixMilli()), // failerrors_test.go
	}
	if j.ClientID != "order-7" || j.Priority != 7 || j.Failures != 1 || j.LastError != "boom" ||
		j.TraceParent != spec.TraceParent || j.Attempt() != 2 || j.Expires.IsZero() || !j.BodyJSON {
		t.Fatalf("Go read the reply as %+v", j)
	}
	var reads []string
	for _, f := range lua.Fields() {
		reads = append(reads, "tostring(job["+f.Lua()+"])")
	}
	script := contractScript("local job = cmsgpack.unpack(redis.call('HGET', K_JOBS, ARGV[1]))\nreturn {" +
		strings.Join(reads, ", ") + "}")
	got, err := script.Exec(ctx, p.client, p.keys.withTopics(p.keys.bucketOf("rec"), "rec"), []string{member(pushed.ID)}).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range lua.Fields() {
		if w, ok := want[f]; !ok {
			t.Errorf("the test does not say what %s holds", f.Lua())
		} else if got[i] != w {
			t.Errorf("%s holds %q, want %q", f.Lua(), got[i], w)
		}
	}
	if len(got) != len(lua.Fields()) {
		t.Errorf("read %d fields: %v", len(got), fmt.Sprint(got))
	}
}

// A field added to a topic's stats by name (lua.StatCreated, S_CREATED):
// the time the topic came to be, read through the contract.
func TestTopicStatCreated(t *testing.T) {
	p, ctx := newPool(t)
	before := time.Now().Add(-time.Second)
	mustPush(t, p, ctx, job.Spec{Topic: "born", Body: "x", TTR: time.Minute})
	st, err := p.TopicStats(ctx, "born")
	if err != nil {
		t.Fatal(err)
	}
	if st.Created.Before(before) || st.Created.After(time.Now().Add(time.Second)) || st.Jobs != 1 {
		t.Fatalf("topic created %v with %d jobs, want just now and 1", st.Created, st.Jobs)
	}
}
