package pool

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/lua"
)

func uniq(key string, mode job.UniqueMode) *job.Unique {
	return &job.Unique{Key: key, For: time.Minute, Mode: mode}
}

// heldBy says which job err names as holding its unique key (0: none).
func heldBy(err error) uint64 {
	var held *job.UniqueError
	if errors.As(err, &held) {
		return held.ID
	}
	return 0
}

// A second push with a held key is refused (naming the holder), whatever
// became of the holder, until the window ends; keys are per topic.
func TestUniqueReject(t *testing.T) {
	p, ctx := newPool(t)
	first := mustPush(t, p, ctx, job.Spec{Topic: "mail", Body: "a", TTR: time.Minute, Unique: uniq("user-42", job.UniqueReject)})
	_, err := p.Push(ctx, job.Spec{Topic: "mail", Body: "b", TTR: time.Minute, Unique: uniq("user-42", job.UniqueReject)})
	if heldBy(err) != first || !errors.Is(err, job.ErrDuplicate) {
		t.Fatalf("second push: %v, want held by %d", err, first)
	}
	mustPush(t, p, ctx, job.Spec{Topic: "sms", Body: "a", Unique: uniq("user-42", job.UniqueReject)}) // another topic's key
	j := mustPop(t, p, ctx, "mail")
	if err := p.Delete(ctx, num(j.ID), j.Attempt()); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Push(ctx, job.Spec{Topic: "mail", Body: "c", Unique: uniq("user-42", job.UniqueReject)}); heldBy(err) != first {
		t.Fatalf("a push after the holder was acked, within the window: %v", err)
	}
	short := &job.Unique{Key: "brief", For: 150 * time.Millisecond, Mode: job.UniqueReject}
	mustPush(t, p, ctx, job.Spec{Topic: "mail", Body: "d", Unique: short})
	time.Sleep(250 * time.Millisecond)
	mustPush(t, p, ctx, job.Spec{Topic: "mail", Body: "e", Unique: short}) // the window is over
	checkStore(t, p, ctx)
}

// replace gives a waiting job the push's body, delay and priority; a
// reserved one is never changed: a fresh job takes the key.
func TestUniqueReplace(t *testing.T) {
	p, ctx := newPool(t)
	rep := uniq("report", job.UniqueReplace)
	first := mustPush(t, p, ctx, job.Spec{Topic: "r", Body: "v1", Priority: 9, Delay: time.Hour, TTR: time.Minute, Unique: rep})
	got, err := p.Push(ctx, job.Spec{Topic: "r", Body: "version2", Priority: 3, TTR: time.Minute, Unique: rep})
	if err != nil || got.ID != first || got.Unique != "replaced" || !got.Due.IsZero() {
		t.Fatalf("replace: %+v %v, want job %d replaced and ready", got, err, first)
	}
	st, err := p.TopicStats(ctx, "r")
	if err != nil || st.Ready != 1 || st.Delayed != 0 || st.Bytes != int64(len("version2")) {
		t.Fatalf("stats after the replace: ready %d, delayed %d, bytes %d, %v", st.Ready, st.Delayed, st.Bytes, err)
	}
	j := mustPop(t, p, ctx, "r")
	if j.ID != first || j.Body != "version2" || j.Priority != 3 {
		t.Fatalf("popped %+v", j)
	}
	second, err := p.Push(ctx, job.Spec{Topic: "r", Body: "v3", TTR: time.Minute, Unique: rep}) // first is reserved
	if err != nil || second.ID == first || second.Unique != "" {
		t.Fatalf("replace of a reserved job's key: %+v %v, want a fresh job", second, err)
	}
	third, err := p.Push(ctx, job.Spec{Topic: "r", Body: "v4", TTR: time.Minute, Unique: rep})
	if err != nil || third.ID != second.ID || third.Unique != "replaced" {
		t.Fatalf("the key moved to the fresh job: %+v %v", third, err)
	}
	if err := p.SetTopicConfig(ctx, "r", job.TopicConfig{"max_item_size": "4"}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Push(ctx, job.Spec{Topic: "r", Body: "too long", Unique: rep}); !errors.Is(err, job.ErrTooBig) {
		t.Fatalf("a replacing body over max_item_size: %v", err)
	}
	checkStore(t, p, ctx)
}

// debounce moves the waiting job's due time to now + the push's delay and
// keeps its body.
func TestUniqueDebounce(t *testing.T) {
	p, ctx := newPool(t)
	deb := uniq("reindex", job.UniqueDebounce)
	first := mustPush(t, p, ctx, job.Spec{Topic: "d", Body: "first", Delay: time.Second, TTR: time.Minute, Unique: deb})
	got, err := p.Push(ctx, job.Spec{Topic: "d", Body: "second", Delay: time.Hour, TTR: time.Minute, Unique: deb})
	if err != nil || got.ID != first || got.Unique != "debounced" || got.Due.Sub(got.Now) != time.Hour {
		t.Fatalf("debounce: %+v %v", got, err)
	}
	j, err := p.Peek(ctx, num(first))
	if err != nil || j.State != job.Delayed || j.Body != "first" || j.Due.Sub(got.Now) != time.Hour {
		t.Fatalf("the debounced job: %+v %v", j, err)
	}
	if got, err := p.Push(ctx, job.Spec{Topic: "d", Body: "now", TTR: time.Minute, Unique: deb}); err != nil || got.ID != first || !got.Due.IsZero() {
		t.Fatalf("a debounce with no delay makes it ready: %+v %v", got, err)
	}
	checkStore(t, p, ctx)
}

// Pushes of one key that share a script call settle in order: one job, and
// every push names it.
func TestUniqueWithinOneCall(t *testing.T) {
	for _, mode := range []job.UniqueMode{job.UniqueReject, job.UniqueReplace, job.UniqueDebounce} {
		t.Run(string(mode), func(t *testing.T) {
			p, ctx := newPool(t)
			specs := make([]job.Spec, 40)
			for i := range specs {
				specs[i] = job.Spec{Topic: "one", Body: "x", Priority: 1, TTR: time.Minute, Unique: uniq("k", mode)}
			}
			got, errs := p.PushBatch(ctx, specs)
			ids := map[uint64]int{}
			for i := range specs {
				switch {
				case errs[i] == nil:
					ids[got[i].ID]++
				case heldBy(errs[i]) != 0:
					ids[heldBy(errs[i])]++
				default:
					t.Fatalf("push %d: %v", i, errs[i])
				}
			}
			st, err := p.TopicStats(ctx, "one")
			if len(ids) != 1 || err != nil || st.Ready != 1 {
				t.Fatalf("ids %v, ready %d (%v): want one job", ids, st.Ready, err)
			}
			checkStore(t, p, ctx)
		})
	}
}

// unique_from = body keys a push with no key of its own on its body's hash,
// with the topic's window and mode; a broker whose memory of the setting
// is stale is told and asks again.
func TestUniqueFromBody(t *testing.T) {
	p, ctx := newPool(t)
	other := New(p.client, p.opts) // a second broker: it learns the setting from its first push
	if err := p.SetTopicConfig(ctx, "b", job.TopicConfig{"unique_from": "body"}); err != nil {
		t.Fatal(err)
	}
	first := mustPush(t, other, ctx, job.Spec{Topic: "b", Body: "same", TTR: time.Minute})
	if _, err := p.Push(ctx, job.Spec{Topic: "b", Body: "same"}); heldBy(err) != first {
		t.Fatalf("the same body again: %v", err)
	}
	mustPush(t, p, ctx, job.Spec{Topic: "b", Body: "another"})
	own, err := p.Push(ctx, job.Spec{Topic: "b", Body: "same", Unique: uniq("own", job.UniqueReject)})
	if err != nil || own.ID == first {
		t.Fatalf("a push with its own key: %+v %v", own, err)
	}
	if err := p.SetTopicConfig(ctx, "b", job.TopicConfig{"unique_mode": "replace"}); err != nil {
		t.Fatal(err)
	}
	if got, err := other.Push(ctx, job.Spec{Topic: "b", Body: "same", Priority: 7}); err != nil || got.ID != first || got.Unique != "replaced" {
		t.Fatalf("unique_mode replace: %+v %v", got, err)
	}
	if err := p.SetTopicConfig(ctx, "b", job.TopicConfig{"unique_from": "none"}); err != nil {
		t.Fatal(err)
	}
	if got, err := other.Push(ctx, job.Spec{Topic: "b", Body: "same"}); err != nil || got.ID == first {
		t.Fatalf("unique_from none, other's memory stale: %+v %v", got, err)
	}
	checkStore(t, p, ctx)
}

// A unique push to a topic with fanout children is refused: its key would
// name one job of several.
func TestUniqueRefusesFanout(t *testing.T) {
	p, ctx := newPool(t)
	if _, err := p.TopicConfig(ctx, "fan+child"); err != nil { // references the child
		t.Fatal(err)
	}
	if _, err := p.Push(ctx, job.Spec{Topic: "fan", Body: "x", Unique: uniq("k", job.UniqueReject)}); !errors.Is(err, job.ErrInvalid) {
		t.Fatalf("unique push to a parent: %v", err)
	}
	checkStore(t, p, ctx)
}

// The unique key's place in KEYS is filled in by encode, after the topics'.
func TestUniqueKeyArg(t *testing.T) {
	if lua.Ops[opPush][uniqueKeyArg] != "unique_key" {
		t.Fatalf("uniqueKeyArg %d is %q", uniqueKeyArg, lua.Ops[opPush][uniqueKeyArg])
	}
}

func checkStore(t *testing.T, p *Pool, ctx context.Context) {
	t.Helper()
	if problems, err := p.Check(ctx); err != nil || len(problems) > 0 {
		t.Fatalf("the store: %v %v", problems, err)
	}
}

// unique_for unset is job.DefaultUniqueFor: batch_push.lua's DEFAULT_UNIQUE_FOR.
func TestDefaultUniqueFor(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.SetTopicConfig(ctx, "w", job.TopicConfig{"unique_from": "body"}); err != nil {
		t.Fatal(err)
	}
	mustPush(t, p, ctx, job.Spec{Topic: "w", Body: "x"})
	key := p.keys.unique("w", bodyKey("x"), true)
	ms, err := p.client.Do(ctx, p.client.B().Pttl().Key(key).Build()).AsInt64()
	if err != nil || ms <= 0 || time.Duration(ms)*time.Millisecond > job.DefaultUniqueFor ||
		time.Duration(ms)*time.Millisecond < job.DefaultUniqueFor-time.Minute {
		t.Fatalf("the key's time to live %d ms (%v), want about %v", ms, err, job.DefaultUniqueFor)
	}
}

// A replace puts the push's job in the waiting one's place: its TTR, expiry
// and retry policy too, its failures forgotten; a replace refused (too big)
// changes nothing, its expiry still indexed.
func TestUniqueReplaceTakesThePushsJob(t *testing.T) {
	p, ctx := newPool(t)
	rep := uniq("r", job.UniqueReplace)
	first := mustPush(t, p, ctx, job.Spec{Topic: "rt", Body: "old", TTR: time.Minute, Expires: time.Now().Add(time.Hour), Unique: rep})
	if err := p.SetTopicConfig(ctx, "rt", job.TopicConfig{"max_item_size": "8"}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Push(ctx, job.Spec{Topic: "rt", Body: "far too long", Unique: rep}); !errors.Is(err, job.ErrTooBig) {
		t.Fatalf("too big: %v", err)
	}
	checkStore(t, p, ctx)
	attempts := 9
	got, err := p.Push(ctx, job.Spec{Topic: "rt", Body: "new", TTR: 5 * time.Second, Unique: rep,
		Retry: &job.RetryPolicy{MaxAttempts: &attempts}})
	if err != nil || got.ID != first {
		t.Fatalf("replace: %+v %v", got, err)
	}
	j, err := p.Peek(ctx, num(first))
	if err != nil || j.Body != "new" || j.TTR != 5*time.Second || !j.Expires.IsZero() {
		t.Fatalf("the replaced job: %+v %v, want the push's TTR and no expiry", j, err)
	}
	checkStore(t, p, ctx)
}

// A holder that expired before a sweep found it is expired by the push,
// whose limits then count it gone (not a false "full").
func TestUniqueExpiredHolderFreesItsRoom(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.SetTopicConfig(ctx, "room", job.TopicConfig{"max_size": "10"}); err != nil {
		t.Fatal(err)
	}
	rep := uniq("k", job.UniqueReplace)
	first := mustPush(t, p, ctx, job.Spec{Topic: "room", Body: "12345678", Delay: 5 * time.Second, Expires: time.Now().Add(30 * time.Millisecond), Unique: rep})
	time.Sleep(60 * time.Millisecond)
	got, err := p.Push(ctx, job.Spec{Topic: "room", Body: "abcdefgh", Unique: rep})
	if err != nil || got.ID == first {
		t.Fatalf("a push after its holder expired: %+v %v, want a fresh job", got, err)
	}
	checkStore(t, p, ctx)
}

// The 409 names the holder by its client id even once the holder is gone.
func TestUniqueNamesAGoneHolderByItsClientID(t *testing.T) {
	p, ctx := newPool(t)
	mustPush(t, p, ctx, job.Spec{Topic: "n", Body: "x", ClientID: "welcome-42", Unique: uniq("k", job.UniqueReject)})
	if err := p.Delete(ctx, "welcome-42", 0); err != nil {
		t.Fatal(err)
	}
	var held *job.UniqueError
	if _, err := p.Push(ctx, job.Spec{Topic: "n", Body: "x", Unique: uniq("k", job.UniqueReject)}); !errors.As(err, &held) || held.ClientID != "welcome-42" {
		t.Fatalf("409 after the holder is gone: %v", err)
	}
}

// A topic with unique_from = body and fanout children takes pushes (each
// copy a job of its own, the key not used): a read that makes a child must
// not make the topic refuse its producers.
func TestUniqueFromBodyWithFanout(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.SetTopicConfig(ctx, "dd", job.TopicConfig{"unique_from": "body"}); err != nil {
		t.Fatal(err)
	}
	mustPush(t, p, ctx, job.Spec{Topic: "dd", Body: "y"})
	if _, err := p.TopicConfig(ctx, "dd+c1"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		mustPush(t, p, ctx, job.Spec{Topic: "dd", Body: "y"})
	}
	checkStore(t, p, ctx)
}
