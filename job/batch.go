package job

import (
	"encoding/json"
	"fmt"
	"time"
)

// A batch is jobs pushed together whose ends are counted: when every one
// has ended (completed, dead, or removed any other way), its on_complete
// callback is pushed, and on_success too when none died; on_death is
// pushed at its first death (docs/workflows.md, Batches).

// The states of a batch.
const (
	BatchOpen      = "open"      // members may still be added; it cannot finish
	BatchClosed    = "closed"    // its members are all listed; it finishes when they have ended
	BatchDone      = "done"      // every member ended; its callbacks were pushed
	BatchCancelled = "cancelled" // deleted: its waiting members cancelled, no callback pushed
)

// MaxBatchJobs is the most jobs one request may put in a batch (a create
// or an add); MaxBatchMembers the most a batch may hold.
const (
	MaxBatchJobs    = 1000
	MaxBatchMembers = 100_000
)

// MaxBatchMeta is the most bytes a batch's meta may take: it goes into
// each callback's body that takes the summary.
const MaxBatchMeta = 16 << 10

// BatchSpec is a batch to create.
type BatchSpec struct {
	Jobs []Spec
	// OnComplete, OnSuccess and OnDeath are its callbacks (nil: none),
	// jobs pushed once each: OnComplete when every member has ended,
	// OnSuccess then if none died, OnDeath at the first death. One
	// WithResult takes the batch's summary (BatchSummary) as its result.
	OnComplete, OnSuccess, OnDeath *Spec
	// Meta is a JSON value kept with the batch and shown in its view and
	// its summary ("" none).
	Meta string
	// Open keeps the batch open for more members until it is closed.
	Open bool
	// WithResults keeps its completed members' results for its summary.
	WithResults bool
}

// Batch is a batch as it stands.
type Batch struct {
	ID      uint64
	State   string
	Created time.Time
	// Finished is when its last member ended (zero: not yet).
	Finished time.Time
	// Total counts its members; Pending those that have not ended.
	Total, Pending, Completed, Dead, Removed int64
	// DeadMembers are the errors of (some of) its dead members, by id.
	DeadMembers map[uint64]string
	Meta        json.RawMessage // nil: none
	WithResults bool
	// Callbacks are the ids its callbacks are (or will be) pushed under,
	// by kind: "on_complete", "on_success", "on_death".
	Callbacks map[string]uint64
}

// CheckBatch checks a batch to create: its members' number, and that no
// member or callback takes a unique key that would change another job
// instead of pushing it (replace, debounce: the batch would count a job
// that is not its own), and meta a JSON value.
func CheckBatch(s BatchSpec) error {
	if len(s.Jobs) > MaxBatchJobs {
		return fmt.Errorf("%w: a batch is created with at most %d jobs (%d given); add more to an open one", ErrInvalid, MaxBatchJobs, len(s.Jobs))
	}
	if err := CheckBatchJobs(s.Jobs); err != nil {
		return err
	}
	if s.Meta != "" && !json.Valid([]byte(s.Meta)) {
		return fmt.Errorf("%w: meta is not a JSON value", ErrInvalid)
	}
	if len(s.Meta) > MaxBatchMeta {
		return fmt.Errorf("%w: meta is %d bytes, at most %d (it goes into the callbacks' summary)", ErrTooBig, len(s.Meta), MaxBatchMeta)
	}
	for name, c := range map[string]*Spec{"on_complete": s.OnComplete, "on_success": s.OnSuccess, "on_death": s.OnDeath} {
		if c != nil && c.Unique != nil {
			return fmt.Errorf("%w: %s: a callback takes no unique key (it is pushed once already)", ErrInvalid, name)
		}
		if c != nil && len(c.After) > 0 {
			return fmt.Errorf("%w: %s: a callback waits for no job (it is pushed when the batch ends)", ErrInvalid, name)
		}
	}
	return nil
}

// CheckBatchJobs checks the jobs a request adds to a batch (CheckBatch).
func CheckBatchJobs(jobs []Spec) error {
	if len(jobs) > MaxBatchJobs {
		return fmt.Errorf("%w: at most %d jobs are added to a batch at once (%d given)", ErrInvalid, MaxBatchJobs, len(jobs))
	}
	for i, j := range jobs {
		if j.Unique != nil && j.Unique.Mode != UniqueReject && j.Unique.Mode != "" {
			return fmt.Errorf("%w: jobs[%d]: a batch's job with a unique key in mode %s would change the job that holds the key instead of joining the batch: use mode reject", ErrInvalid, i, j.Unique.Mode)
		}
	}
	return nil
}
