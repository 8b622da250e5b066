package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gmq/gmq/internal/jobjson"
	"github.com/gmq/gmq/job"
)

// Batches (docs/workflows.md, Batches): POST /api/v1/batches creates one
// with its jobs, GET /api/v1/batches/:id shows it, POST .../jobs adds to
// it, POST .../close closes it, DELETE cancels it; GET /api/v1/batches
// lists them, newest first.

// batchView is a batch as the API shows it.
type batchView struct {
	ID        string `json:"id"`
	State     string `json:"state"`
	Total     int64  `json:"total"`
	Pending   int64  `json:"pending"`
	Completed int64  `json:"completed"`
	Dead      int64  `json:"dead"`
	// Removed counts the members that ended otherwise: deleted, expired,
	// discarded, flushed or purged, cancelled.
	Removed int64 `json:"removed"`
	// DeadJobs are (up to 100 of) its dead members' last errors, by id.
	DeadJobs    map[string]string `json:"dead_jobs,omitempty"`
	Meta        json.RawMessage   `json:"meta,omitempty"`
	WithResults bool              `json:"with_results,omitempty"`
	Callbacks   map[string]string `json:"callbacks,omitempty"`
	CreatedAt   string            `json:"created_at"`
	FinishedAt  string            `json:"finished_at,omitempty"`
}

func viewBatch(b job.Batch) batchView {
	v := batchView{ID: strconv.FormatUint(b.ID, 10), State: b.State, Total: b.Total, Pending: b.Pending,
		Completed: b.Completed, Dead: b.Dead, Removed: b.Removed, Meta: b.Meta, WithResults: b.WithResults,
		CreatedAt: b.Created.UTC().Format(time.RFC3339Nano)}
	if !b.Finished.IsZero() {
		v.FinishedAt = b.Finished.UTC().Format(time.RFC3339Nano)
	}
	for id, e := range b.DeadMembers {
		if v.DeadJobs == nil {
			v.DeadJobs = map[string]string{}
		}
		v.DeadJobs[strconv.FormatUint(id, 10)] = e
	}
	for name, id := range b.Callbacks {
		if v.Callbacks == nil {
			v.Callbacks = map[string]string{}
		}
		v.Callbacks[name] = strconv.FormatUint(id, 10)
	}
	return v
}

// batchID reads the :id of a batch's route; one that is no batch's number
// is not found.
func batchID(c *gin.Context) (uint64, error) {
	text := c.Param("id")
	id, err := strconv.ParseUint(text, 10, 64)
	if err != nil || !job.IsNumber(text) || strconv.FormatUint(id, 10) != text { // one spelling: no leading zeros
		return 0, fmt.Errorf("batch %q: %w", text, job.ErrNotFound)
	}
	return id, nil
}

func memberIDs(pushed []job.Pushed) []string {
	ids := make([]string, len(pushed))
	for i, p := range pushed {
		ids[i] = job.PublicID(p.ClientID, p.ID)
	}
	return ids
}

func (s *Server) createBatch(c *gin.Context) (int, any, error) {
	data, err := s.body(c, int64(job.MaxBatchJobs+3)*s.pushLimit())
	if err != nil {
		return 0, nil, err
	}
	f, err := jobjson.Decode(data)
	if err != nil {
		return 0, nil, err
	}
	spec, err := jobjson.Batch(f, s.defaults())
	if err != nil {
		return 0, nil, err
	}
	id, pushed, err := s.d.Batches().Create(c, spec)
	if err != nil {
		if id != 0 { // made, then cancelled: a job of it was refused
			return 0, gin.H{"batch": strconv.FormatUint(id, 10)}, err
		}
		return 0, nil, err
	}
	return http.StatusCreated, gin.H{"id": strconv.FormatUint(id, 10), "ids": memberIDs(pushed)}, nil
}

func (s *Server) getBatch(c *gin.Context) (int, any, error) {
	id, err := batchID(c)
	if err != nil {
		return 0, nil, err
	}
	b, err := s.d.Batches().Get(c, id)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, viewBatch(b), nil
}

// batchesPage is GET /api/v1/batches's default limit, and its most.
const batchesPage, maxBatchesPage = 50, 1000

// listBatches answers the batches kept, newest first, a page of them:
// {"total", "offset", "batches": [view, ...]}.
func (s *Server) listBatches(c *gin.Context) (int, any, error) {
	p, err := parsePage(c.Query("offset"), c.Query("limit"), batchesPage, maxBatchesPage)
	if err != nil {
		return 0, nil, err
	}
	list, total, err := s.d.Batches().List(c, p.offset, p.limit)
	if err != nil {
		return 0, nil, err
	}
	views := make([]batchView, len(list))
	for i, b := range list {
		views[i] = viewBatch(b)
	}
	return http.StatusOK, gin.H{"total": total, "offset": p.offset, "batches": views}, nil
}

func (s *Server) addToBatch(c *gin.Context) (int, any, error) {
	id, err := batchID(c)
	if err != nil {
		return 0, nil, err
	}
	data, err := s.body(c, int64(job.MaxBatchJobs)*s.pushLimit())
	if err != nil {
		return 0, nil, err
	}
	f, err := jobjson.Decode(data)
	if err == nil {
		err = f.Only("jobs to add to a batch", "jobs")
	}
	if err != nil {
		return 0, nil, err
	}
	jobs, err := f.Jobs("jobs", s.defaults(), job.MaxBatchJobs)
	if err == nil && len(jobs) == 0 {
		err = fmt.Errorf("%w: jobs is missing or empty", errBadRequest)
	}
	if err != nil {
		return 0, nil, err
	}
	pushed, err := s.d.Batches().Add(c, id, jobs)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, gin.H{"ids": memberIDs(pushed)}, nil
}

func (s *Server) closeBatch(c *gin.Context) (int, any, error) {
	id, err := batchID(c)
	if err != nil {
		return 0, nil, err
	}
	if err := s.d.Batches().Close(c, id); err != nil {
		return 0, nil, err
	}
	return s.getBatch(c)
}

func (s *Server) cancelBatch(c *gin.Context) (int, any, error) {
	id, err := batchID(c)
	if err != nil {
		return 0, nil, err
	}
	n, err := s.d.Batches().Cancel(c, id)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, gin.H{"cancelled": n}, nil
}
