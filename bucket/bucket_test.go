package bucket_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/bucket"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/pool"
)

// readyLog records when the timer reported jobs ready.
type readyLog struct {
	mu   sync.Mutex
	at   []time.Time
	seen chan struct{}
}

func (r *readyLog) onReady(topic string, n int) {
	r.mu.Lock()
	for range n {
		r.at = append(r.at, time.Now())
	}
	r.mu.Unlock()
	select {
	case r.seen <- struct{}{}:
	default:
	}
}

func setup(t *testing.T, maxSleep time.Duration) (*pool.Pool, *bucket.Bucket, *readyLog, *redistest.Server) {
	t.Helper()
	srv := redistest.Start(t)
	client, err := pool.Dial(context.Background(), srv.URL(), 5*time.Second, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	p := pool.New(client, brokertest.PoolOptions(1, "t"))
	if err := p.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	log := &readyLog{seen: make(chan struct{}, 1)}
	b := bucket.New(0, p, bucket.Options{MaxSleep: maxSleep, TopicsPerRound: config.Default().TopicsPerRound, OnReady: log.onReady})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { b.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return p, b, log, srv
}

func (r *readyLog) wait(t *testing.T, limit time.Duration) time.Time {
	t.Helper()
	select {
	case <-r.seen:
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.at[len(r.at)-1]
	case <-time.After(limit):
		t.Fatalf("nothing became ready within %v", limit)
		return time.Time{}
	}
}

func TestNudgedTimerFiresOnTime(t *testing.T) {
	p, b, log, _ := setup(t, time.Minute)
	brokertest.Eventually(t, "the timer asleep", func() bool { return !b.NextWake().IsZero() }) // for up to a minute
	got, err := p.Push(context.Background(), job.Spec{Topic: "t", Body: "x", Delay: 150 * time.Millisecond, TTR: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	due := time.Now().Add(got.Due.Sub(got.Now))
	b.Nudge(due)
	at := log.wait(t, 90*time.Second)
	// Never early; and at the due time, not at the idle timer's minute: it
	// takes under 50 ms on an idle machine, and 5 s is the margin for a
	// loaded one.
	if late := at.Sub(due); late < -5*time.Millisecond || late > 5*time.Second {
		t.Fatalf("moved %v after the due time, want 0..5s", late)
	}
}

// A job scheduled where this timer cannot be nudged (another broker) is
// still moved within MaxSleep.
func TestUnnudgedJobWithinMaxSleep(t *testing.T) {
	p, b, log, _ := setup(t, 300*time.Millisecond)
	brokertest.Eventually(t, "the timer asleep", func() bool { return !b.NextWake().IsZero() })
	start := time.Now()
	if _, err := p.Push(context.Background(), job.Spec{Topic: "t", Body: "x", Delay: 10 * time.Millisecond, TTR: time.Minute}); err != nil {
		t.Fatal(err)
	}
	// The timer is set to wake within MaxSleep of now, whatever the load...
	if next := b.NextWake(); next.After(time.Now().Add(300 * time.Millisecond)) {
		t.Fatalf("the timer wakes at %v, past MaxSleep (300ms) from now", time.Until(next))
	}
	// ...and then moves the job: 400 ms on an idle machine; 5 s is the
	// margin for a loaded one, far below never.
	if took := log.wait(t, time.Minute).Sub(start); took > 5*time.Second {
		t.Fatalf("moved after %v, want within MaxSleep (300ms)", took)
	}
}

// After Redis comes back the timer resumes on its own.
func TestTimerSurvivesRedisOutage(t *testing.T) {
	p, _, log, srv := setup(t, 100*time.Millisecond)
	srv.Kill()
	time.Sleep(300 * time.Millisecond) // the timer fails and backs off meanwhile
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	var err error
	// A minute for Redis to be back: only a timer that never resumes waits it out.
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err = p.Push(context.Background(), job.Spec{Topic: "t", Body: "x", Delay: time.Millisecond, TTR: time.Minute}); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	log.wait(t, time.Minute)
}
