package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"time"
)

// Unique makes a push one of its kind in its topic: while Key is held (For
// after the push that took it), another push with the same key is refused,
// or changes the waiting job that holds the key, as Mode says. A job that
// is no longer waiting (reserved, or done) is never changed: a replace or
// debounce then stores a fresh job, which takes the key.
type Unique struct {
	Key  string        // 1 to 256 bytes
	For  time.Duration // how long the key is held: 1 ms to 30 days, sent in whole milliseconds
	Mode string        // UniqueReject (or ""), UniqueReplace or UniqueDebounce
}

// What a push does when its unique key is held (Unique.Mode).
const (
	// UniqueReject (the default) refuses the push: an *Error with Status
	// 409 whose HeldBy names the job that holds the key.
	UniqueReject = "reject"
	// UniqueReplace gives the waiting job that holds the key the push's
	// body, delay and priority; Pushed.Unique is then UniqueReplaced.
	UniqueReplace = "replace"
	// UniqueDebounce moves the waiting job's due time to now plus the
	// push's delay; Pushed.Unique is then UniqueDebounced.
	UniqueDebounce = "debounce"
)

// What a unique push did to the waiting job that held its key (Pushed.Unique).
const (
	UniqueReplaced  = "replaced"
	UniqueDebounced = "debounced"
)

// uniqueWire is Unique as gmq reads it: for in seconds.
type uniqueWire struct {
	Key  string  `json:"key"`
	For  float64 `json:"for"`
	Mode string  `json:"mode,omitempty"`
}

// MarshalJSON writes u as gmq reads it: {"key", "for" (seconds), "mode"}.
func (u Unique) MarshalJSON() ([]byte, error) {
	return json.Marshal(uniqueWire{u.Key, u.For.Seconds(), u.Mode})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (u *Unique) UnmarshalJSON(data []byte) error {
	var w uniqueWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	if math.IsNaN(w.For) || math.Abs(w.For) > math.MaxInt64/float64(time.Second) {
		return fmt.Errorf("gmq: unique for: %v seconds is out of range", w.For)
	}
	*u = Unique{Key: w.Key, For: time.Duration(math.Round(w.For * float64(time.Second))), Mode: w.Mode}
	return nil
}

// HeldBy is, for gmq's 409 to a unique push (mode reject), the id of the
// job that holds the key; "" for any other error. That job may be done
// already: the key is held for its window whatever becomes of the job
// (and a job that is gone is named by its number, even if it had an ID).
func HeldBy(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.HeldBy
	}
	return ""
}

// ReleaseUnique frees topic's unique key before its window ends, whatever
// became of the job that took it: the next push with the key takes it
// afresh. gmq's 404 (IsNotFound) when the key is not held. A retry after a
// 503 that finds it not held was answered by the earlier try: released.
func (c *Client) ReleaseUnique(ctx context.Context, topic, key string) error {
	path := "/api/v1/topics/" + url.PathEscape(topic) + "/unique/" + url.PathEscape(key)
	err := c.call(ctx, http.MethodDelete, path, nil, 0, nil)
	if e := asError(err); e != nil && e.Retried && e.Status == http.StatusNotFound {
		return nil
	}
	return err
}
