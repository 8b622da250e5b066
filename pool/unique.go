package pool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/lua"
)

// A unique push carries one more key, in its topic's slot: the job that
// holds it, for its window (lua/batch.lua by_key). Its key is the push's own
// (job.Unique) or, for a push with none to a topic whose unique_from is
// body, a hash of the body; batch.lua then takes the window and the mode
// from the topic's settings.

// uniqueKeyArg is where a push's unique key's place in KEYS goes.
var uniqueKeyArg = lua.OpArgIndex(opPush, "unique_key")

// uniqueFromTopic is the unique_mode of a push whose key is its body's
// hash: the topic's settings say the window and the mode.
const uniqueFromTopic = "topic"

// uniqueBodyCache remembers the topics whose unique_from is body, as a push
// script last said. It may be stale (changed at run time, or by another
// broker): the push script checks the setting every time and refuses a push
// that does not follow it ('UNIQUE_FROM'), so a stale entry costs a retry,
// never a push keyed wrongly. Only topics with the setting are kept.
type uniqueBodyCache struct {
	mu     sync.Mutex
	topics map[string]bool
}

func (c *uniqueBodyCache) get(topic string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.topics[topic]
}

func (c *uniqueBodyCache) set(topic string, byBody bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !byBody {
		delete(c.topics, topic)
		return
	}
	if c.topics == nil {
		c.topics = map[string]bool{}
	}
	c.topics[topic] = true
}

// uniqueArgs are a push's unique arguments and its key ("" for none): j's
// own key, or with byBody (and none of j's own) the hash of j's body.
func (p *Pool) uniqueArgs(j job.Spec, byBody bool) (key, mode, window string) {
	switch {
	case j.Unique != nil:
		return p.keys.unique(j.Topic, j.Unique.Key, false), string(j.Unique.Mode), strconv.FormatInt(millis(j.Unique.For), 10)
	case byBody:
		return p.keys.unique(j.Topic, bodyKey(j.Body), true), uniqueFromTopic, "0"
	}
	return "", "", "0"
}

// bodyKey is a body's unique key: its SHA-256, in hex.
func bodyKey(body string) string {
	sum := sha256.Sum256([]byte(body))
	return hex.EncodeToString(sum[:])
}

// uniqueFanoutError is a unique push to a topic with fanout children, which
// a unique key cannot name (job.ErrInvalid; a follow-up's marker then
// steps aside: followups.go).
type uniqueFanoutError struct{ topic string }

func (e uniqueFanoutError) Error() string {
	return fmt.Sprintf("push to %q: %v: it has fanout children, and a unique key names one job", e.topic, job.ErrInvalid)
}

func (e uniqueFanoutError) Unwrap() error { return job.ErrInvalid }

// uniqueOutcome reads a push's reply that its unique key settled: a job
// changed (Pushed naming it, true), a refusal (an error, true), or neither
// (false: the push stored a new job, or was refused otherwise).
func (p *Pool) uniqueOutcome(j job.Spec, reply pushReply) (Pushed, bool, error) {
	status := reply.Status
	switch status {
	case replyUnique, replyReplaced, replyDebounced:
	case replyUniqueFanout:
		return Pushed{}, true, uniqueFanoutError{j.Topic}
	default:
		return Pushed{}, false, nil
	}
	holder, err := parseMember(reply.Holder)
	if err != nil {
		return Pushed{}, true, fmt.Errorf("push to %q: unique key's job: %w", j.Topic, err)
	}
	if status == replyUnique {
		key := "sha256:" + bodyKey(j.Body)
		if j.Unique != nil {
			key = j.Unique.Key
		}
		return Pushed{}, true, &job.UniqueError{Topic: j.Topic, Key: key, ID: holder, ClientID: reply.CID}
	}
	p.topicOf.put(holder, j.Topic)
	out := Pushed{ID: holder, Now: time.UnixMilli(reply.Now), Kept: true, Unique: "replaced", ClientID: reply.CID}
	if status == replyDebounced {
		out.Unique = "debounced"
	}
	if due := reply.Due; due > 0 {
		out.Due = time.UnixMilli(due)
	}
	return out, true, nil
}

// ReleaseUnique frees topic's unique key before its window ends (an
// operator's, after the job it held for is dealt with); ErrNotFound when
// the key is not held.
func (p *Pool) ReleaseUnique(ctx context.Context, topic, key string) error {
	n, err := p.client.Do(ctx, p.client.B().Del().Key(p.keys.unique(topic, key, false)).Build()).AsInt64()
	if err != nil {
		return wrapRedis("release unique key", err)
	}
	if n == 0 {
		return fmt.Errorf("unique key %q of topic %q: %w", key, topic, job.ErrNotFound)
	}
	return nil
}
