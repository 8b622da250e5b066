package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Batches (gmq's docs/workflows.md, Batches): jobs pushed together whose
// ends gmq counts; when every one has ended it pushes the batch's
// OnComplete job once, and OnSuccess too if none died; OnDeath once at
// the first death.

// NewBatch is a batch to create.
type NewBatch struct {
	Jobs []Job `json:"jobs"`
	// The callbacks (nil: none), jobs as Push takes them but without ID,
	// Unique or After; one WithResult gets the batch's summary as its
	// result.
	OnComplete *Job `json:"on_complete,omitempty"`
	OnSuccess  *Job `json:"on_success,omitempty"`
	OnDeath    *Job `json:"on_death,omitempty"`
	// Meta is any JSON value (nil: none), kept with the batch and in its
	// summary.
	Meta any `json:"meta,omitempty"`
	// Open keeps the batch open for AddToBatch until CloseBatch.
	Open bool `json:"open,omitempty"`
	// WithResults keeps the completed jobs' results for the summary.
	WithResults bool `json:"with_results,omitempty"`
}

// Batch is a batch as gmq shows it.
type Batch struct {
	ID    string `json:"id"`
	State string `json:"state"` // "open", "closed", "done" or "cancelled"
	// Total counts its jobs; Pending those that have not ended; Removed
	// those that ended otherwise than completed or dead (deleted, expired,
	// cancelled...).
	Total, Pending, Completed, Dead, Removed int
	// DeadJobs are (up to 100 of) its dead jobs' last errors, by id.
	DeadJobs   map[string]string `json:"dead_jobs"`
	Meta       json.RawMessage   `json:"meta"`
	Callbacks  map[string]string `json:"callbacks"` // the ids its callbacks are pushed under, by kind
	CreatedAt  time.Time         `json:"created_at"`
	FinishedAt time.Time         `json:"finished_at,omitzero"`
}

// CreateBatch creates a batch and pushes its jobs; it returns the batch's
// id and its jobs' ids, in order. A bad batch is an *Error with Status
// 400; one whose job its topic refused (409, 507...) was cancelled, with
// its jobs already pushed: create it again.
func (c *Client) CreateBatch(ctx context.Context, b NewBatch) (string, []string, error) {
	if b.Jobs == nil {
		b.Jobs = []Job{}
	}
	var out struct {
		ID  string   `json:"id"`
		IDs []string `json:"ids"`
	}
	err := c.call(ctx, http.MethodPost, "/api/v1/batches", b, 0, &out)
	return out.ID, out.IDs, err
}

// GetBatch reads batch id (an *Error with Status 404: none, or removed
// past its retention).
func (c *Client) GetBatch(ctx context.Context, id string) (*Batch, error) {
	var b Batch
	if err := c.call(ctx, http.MethodGet, batchPath(id, ""), nil, 0, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// AddToBatch pushes jobs into batch id, open, or closed and not done (a
// running job may add to its own batch); 409 once it is done.
func (c *Client) AddToBatch(ctx context.Context, id string, jobs []Job) ([]string, error) {
	var out struct {
		IDs []string `json:"ids"`
	}
	err := c.call(ctx, http.MethodPost, batchPath(id, "/jobs"), map[string]any{"jobs": jobs}, 0, &out)
	return out.IDs, err
}

// CloseBatch closes an open batch: it is done once its jobs have ended.
func (c *Client) CloseBatch(ctx context.Context, id string) (*Batch, error) {
	var b Batch
	if err := c.call(ctx, http.MethodPost, batchPath(id, "/close"), nil, 0, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// CancelBatch cancels batch id: its jobs that have not ended are
// cancelled, and no callback is pushed. It returns how many were asked to
// cancel.
func (c *Client) CancelBatch(ctx context.Context, id string) (int, error) {
	var out struct {
		Cancelled int `json:"cancelled"`
	}
	err := c.call(ctx, http.MethodDelete, batchPath(id, ""), nil, 0, &out)
	return out.Cancelled, err
}

// BatchPage is a page of the batches gmq keeps, newest first (ListBatches).
type BatchPage struct {
	Total   int     `json:"total"` // how many are kept in all
	Offset  int     `json:"offset"`
	Batches []Batch `json:"batches"`
}

// ListBatches reads the batches gmq keeps (within their batch_retention),
// newest first, each without its DeadJobs (GetBatch has them): limit of them (1 to 1,000; more is cut to 1,000) from
// offset. It reaches the newest 5,000 (offset plus limit; past that an
// *Error with Status 400): read older ones by id (GetBatch).
func (c *Client) ListBatches(ctx context.Context, offset, limit int) (*BatchPage, error) {
	var page BatchPage
	q := url.Values{"offset": {strconv.Itoa(offset)}, "limit": {strconv.Itoa(limit)}}
	if err := c.call(ctx, http.MethodGet, "/api/v1/batches?"+q.Encode(), nil, 0, &page); err != nil {
		return nil, err
	}
	return &page, nil
}

func batchPath(id, rest string) string { return "/api/v1/batches/" + url.PathEscape(id) + rest }
