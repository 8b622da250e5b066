package pool

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/lua"
)

// A Redis that lost gmq's library (FUNCTION FLUSH here; a restart without
// its data, a new cluster node) is given it again by the next call, which
// then succeeds: a push, a pop and an ack each find it gone.
func TestLibraryReloaded(t *testing.T) {
	p, ctx := newPool(t)
	listed := func() bool {
		names, err := p.client.Do(ctx, p.client.B().FunctionList().Libraryname(lua.TheLibrary().Name).Build()).ToArray()
		if err != nil {
			t.Fatal(err)
		}
		return len(names) == 1
	}
	if !listed() {
		t.Fatalf("Init did not load %s", lua.TheLibrary().Name)
	}
	flush := func() {
		if err := p.client.Do(ctx, p.client.B().FunctionFlush().Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	flush()
	id := mustPush(t, p, ctx, job.Spec{Topic: "lib", Body: "x", TTR: time.Minute})
	flush()
	if j := mustPop(t, p, ctx, "lib"); j == nil || j.ID != id {
		t.Fatalf("pop after the library was flushed: %+v", j)
	}
	flush()
	if err := p.Delete(ctx, num(id), 1); err != nil {
		t.Fatalf("ack after the library was flushed: %v", err)
	}
	if !listed() {
		t.Fatal("the library is not loaded again")
	}
	checkClean(t, p, ctx)
}

// A start against a Redis user that may not load functions fails, saying
// what gmq needs, rather than at the first push.
func TestInitNeedsFunctionLoad(t *testing.T) {
	redis.Flush(t)
	if _, err := redis.Do("ACL", "SETUSER", "nofunctions", "on", ">pw", "~gmq:*", "&gmq:*", "+@all", "-function"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = redis.Do("ACL", "DELUSER", "nofunctions") })
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{redis.Addr}, Username: "nofunctions",
		Password: "pw", DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	p := New(client, withDefaults(Options{Prefix: "gmq", Buckets: 4, Origin: "t"}))
	err = p.Init(t.Context())
	if err == nil || !strings.Contains(err.Error(), "FUNCTION LOAD") || !strings.Contains(err.Error(), "Redis 7") {
		t.Fatalf("init as a user refused FUNCTION LOAD: %v, want an error naming what gmq needs", err)
	}
}

// A Redis that lost the library, reached by a user who may call functions
// but not load them: the call answers ErrUnavailable, and says why the
// library was not loaded again, not only that a function is missing.
func TestMissingLibraryNotLoadedSaysWhy(t *testing.T) {
	p, ctx := newPool(t) // loads the library
	if _, err := redis.Do("ACL", "SETUSER", "callonly", "on", ">pw", "~gmq:*", "&gmq:*", "+@all", "-function"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = redis.Do("ACL", "DELUSER", "callonly") })
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{redis.Addr}, Username: "callonly",
		Password: "pw", DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	caller := New(client, p.opts)
	mustPush(t, caller, ctx, job.Spec{Topic: "lib", Body: "x", TTR: time.Minute})
	if err := p.client.Do(ctx, p.client.B().FunctionFlush().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	_, err = caller.Push(ctx, job.Spec{Topic: "lib", Body: "y", TTR: time.Minute})
	if !errors.Is(err, job.ErrUnavailable) || !strings.Contains(err.Error(), "Function not found") ||
		!strings.Contains(err.Error(), "load gmq's functions") || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("push once the library is gone, as a user who may not load it: %v", err)
	}
}
