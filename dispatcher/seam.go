package dispatcher

import (
	"context"
	"time"

	"github.com/gmq/gmq/bucket"
	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/pool"
)

// Store is the dispatcher's seam to the job store: what it asks of Redis,
// and nothing of how (package pool implements it; broker passes a
// *pool.Pool). It is the interfaces below, one a concern, so that a part
// of the dispatcher can be given only its own (Schedules, Batches, Status)
// and a reader sees at once what the core asks of the store. Each method's
// doc is pool's.
type Store interface {
	JobStore
	PopStore
	TopicStore
	ScheduleStore
	BatchStore
	StatusStore
	EventStore
	FleetStore
	StoreInfo    // what the front ends read of the store itself (Dispatcher.Store)
	bucket.Store // the timers' (DueTopics, Tick)
}

// JobStore is the operations on one job, found by its public id (pool's onJob).
type JobStore interface {
	Peek(ctx context.Context, id string) (*job.Job, error)
	Resolve(ctx context.Context, public string) (uint64, error)
	ReserveJob(ctx context.Context, id string) (*job.Job, error)
	Ack(ctx context.Context, id string, attempt int, result string) error
	AckKept(ctx context.Context, id string, attempt int, result string) (time.Duration, error)
	AckPushing(ctx context.Context, id string, attempt int, result string, specs []job.Spec) (pool.AckedPushing, error)
	Delete(ctx context.Context, id string, attempt int) error
	DeleteUnreserved(ctx context.Context, id string) error
	Release(ctx context.Context, id string, attempt int, pri int64, delay time.Duration) (*job.Job, error)
	GiveBack(ctx context.Context, id string, attempt int) (*job.Job, error)
	Bury(ctx context.Context, id string, attempt int, pri int64) (*job.Job, error)
	Touch(ctx context.Context, id string, attempt int) (*job.Job, error)
	Progress(ctx context.Context, id string, attempt int, progress, line string) (*job.Job, error)
	Fail(ctx context.Context, id string, attempt int, reason string) (*job.Job, error)
	Cancel(ctx context.Context, id string) (*job.Job, error)
	KickJob(ctx context.Context, id string) (*job.Job, error)
	UpdateJob(ctx context.Context, id string, u job.Update) (*job.Job, error)
	MarkEndWait(ctx context.Context, n uint64) (*job.Job, error)
}

// PopStore is pushes and pops: the hot path.
type PopStore interface {
	Push(ctx context.Context, j job.Spec) (pool.Pushed, error)
	PushBatch(ctx context.Context, jobs []job.Spec) ([]pool.Pushed, []error)
	Pop(ctx context.Context, topics []string) (pool.Popped, error)
	PopBest(ctx context.Context, topics []string) (pool.Popped, error)
	PopN(ctx context.Context, topics []string, n int) (pool.Popped, error)
	Take(ctx context.Context, topics []string) (pool.Popped, error)
	AckAndPop(ctx context.Context, id string, attempt int, result string, topics []string) (pool.Popped, error)
}

// TopicStore is topics: their jobs, settings, pauses and stats.
type TopicStore interface {
	Topics(ctx context.Context) ([]string, error)
	TopicPage(ctx context.Context, offset, limit int) (names []string, total int, err error)
	TopicCount(ctx context.Context) (int, error)
	TopicStats(ctx context.Context, topic string) (job.TopicStats, error)
	TopicStatsOf(ctx context.Context, topics []string) ([]job.TopicStats, []error)
	TopicSettings(ctx context.Context, topic string) (job.TopicConfig, error)
	TopicConfig(ctx context.Context, topic string) (job.TopicLayers, error)
	SetTopicConfig(ctx context.Context, topic string, changes job.TopicConfig) error
	ApplyTopicConfig(ctx context.Context, defaults job.TopicConfig, topics map[string]job.TopicConfig) error
	Pause(ctx context.Context, topic string, pp pool.PauseParams) (until time.Time, err error)
	PeekTopic(ctx context.Context, topic string, s job.State) (*job.Job, error)
	ListJobs(ctx context.Context, topic string, s job.State, offset, limit int) ([]*job.Job, int, error)
	Kick(ctx context.Context, topic string, n int) (int, error)
	FlushExpired(ctx context.Context, topic string) (int, error)
	Purge(ctx context.Context, topic string, states ...job.State) (int, error)
	Retry(ctx context.Context, topic string, s job.State, ids []string) (int, error)
	DeleteTopic(ctx context.Context, topic string) (int, error)
	ReleaseUnique(ctx context.Context, topic, key string) error
	NoteHeld(ctx context.Context, topic string, d time.Duration) error
	MarkWaiting(ctx context.Context, topic string, ttl time.Duration) error
	WakeEveryone(ctx context.Context, topic string) error
	WebhookTopics(ctx context.Context) ([]string, error)
}

// ScheduleStore is leaderless cron (Dispatcher.Schedules).
type ScheduleStore interface {
	Schedule(ctx context.Context, name string) (job.Schedule, error)
	Schedules(ctx context.Context) ([]job.Schedule, error)
	ScheduleCount(ctx context.Context) (int64, error)
	ChangeSchedule(ctx context.Context, name string, change func(cur job.Schedule, found bool) (pool.ScheduleWrite, error)) error
	DeleteSchedule(ctx context.Context, name string) error
	FireNow(ctx context.Context, name string) (pool.Pushed, error)
}

// BatchStore is batches (Dispatcher.Batches).
type BatchStore interface {
	CreateBatch(ctx context.Context, s job.BatchSpec) (uint64, []pool.Pushed, error)
	AddToBatch(ctx context.Context, id uint64, jobs []job.Spec) ([]pool.Pushed, error)
	CloseBatch(ctx context.Context, id uint64) error
	CancelBatch(ctx context.Context, id uint64) (int, error)
	Batch(ctx context.Context, id uint64) (job.Batch, error)
	Batches(ctx context.Context, offset, limit int) ([]job.Batch, int64, error)
	BatchStats() pool.BatchStats
}

// StatusStore is the fleet's and each broker's status (Dispatcher.Status).
type StatusStore interface {
	Status(ctx context.Context, mine job.StatusLayer) (pool.StatusRead, error)
	SetStatus(ctx context.Context, scope pool.StatusScope, s job.Status, grace time.Duration) (job.StatusLayer, time.Time, error)
}

// EventStore is the buckets' event streams and the topics' history.
type EventStore interface {
	EventsBucket(topic string) int
	EventBounds(ctx context.Context, b int) (first, last string, err error)
	ReadEvents(ctx context.Context, b int, after string, count int, block time.Duration) ([]job.Event, error)
	TopicHistory(ctx context.Context, topics []string) (map[string][]job.Sample, error)
	RecordTopicHistory(ctx context.Context, keep int, ttl time.Duration, samples map[string]map[string]int64) error
	AddHistory(ctx context.Context, every time.Duration, keep int, values map[string]int64) (bool, error)
}

// FleetStore is the store itself: its format, epoch, counters and buckets, and the wake-ups between brokers.
type FleetStore interface {
	Init(ctx context.Context) error
	Announce(ctx context.Context) (pool.Announced, error)
	Origin() string
	Format() int
	Epoch() string
	EpochChanged(a pool.Announced) bool
	Migrated(ctx context.Context) (int, error)
	MigrateStep(ctx context.Context, b int, cursor string) (string, int64, error)
	SetMigrated(ctx context.Context, f int) error
	Stats(ctx context.Context) (job.Counters, error)
	FlushTotals(ctx context.Context) error
	RefusedExpired() int64
	LeftAliases() int64
	Buckets() int
	BucketOf(topic string) int
	Bucket(ctx context.Context, b int) (pool.BucketInfo, error)
	BucketNodes(ctx context.Context) []string
	Subscribe(ctx context.Context, onSubscribed func(), fn func(pool.Wake)) error
	SetWaiting(waiting func() bool)
	OnFollowUpDue(fn func(topic string, due, now time.Time))
	OnFollowUpsReady(fn func(topic string, n int))
}
