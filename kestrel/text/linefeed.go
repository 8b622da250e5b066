package text

// Items this protocol cannot carry. An answer's item ends at its line
// feed, and kestrel assumes "items ... have no embedded linefeeds"
// (docs/text_protocol.md); a put cannot make one. But an item pushed over
// HTTP, beanstalkd's or memcache's protocol may hold one, and sent as it is
// its rest would be read as the next answers. So a get or monitor that
// reserves one gives it back at once (nothing is lost; the next reader
// over another protocol gets it) and answers
// "-item <id> holds a line feed: read <queue> over another protocol".

import (
	"fmt"
	"strings"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/internal/tcpserver"
	"github.com/gmq/gmq/job"
)

func holdsLF(j *job.Job) bool { return strings.IndexByte(j.Body, '\n') >= 0 }

func lfMessage(queue, id string) string {
	return "item " + id + " holds a line feed: read " + queue + " over another protocol"
}

// refuseLF gives back reserved item j, which holds a line feed, and says
// so, naming the job that now holds it.
func (c *conn) refuseLF(queue string, j *job.Job) error {
	id, err := c.giveBack(j)
	if err != nil {
		return &tcpserver.StoreErr{Op: "get", Err: err}
	}
	return refused(lfMessage(queue, id))
}

// giveBack makes reserved job j ready again, at the head of its queue,
// unchanged. A job whose TTR is 0 was removed as it was popped: it is
// pushed again, a copy with its client id, at its queue's tail (its own
// retry policy, which a job read does not carry, is its topic's from then).
// If a give-back fails, the job stays reserved and its TTR gives it back.
// It returns the public id of the job that holds the item now: the copy's
// for a copy (a new number, unless the job had a client id).
func (c *conn) giveBack(j *job.Job) (string, error) {
	if j.TTR > 0 {
		_, err := c.s.d.Settle(c.writeCtx(), dispatcher.SettleParams{
			Ack: dispatcher.Ack{ID: j.PublicID(), Attempt: j.Attempt()}, Action: dispatcher.ActionGiveBack})
		if err != nil && !job.NotHeld(err) {
			return "", fmt.Errorf("item %s holds a line feed, and giving it back failed (its TTR will): %w", j.PublicID(), err)
		}
		return j.PublicID(), nil // or gone meanwhile: nothing to give back
	}
	pushed, err := c.s.d.Push(c.writeCtx(), j.Again())
	if err != nil {
		c.s.log.Error("kestrel text: an item holding a line feed, taken as its TTR is 0, could not be pushed again: it is lost",
			"id", j.PublicID(), "queue", j.Topic, "bytes", len(j.Body), "err", err)
		return "", fmt.Errorf("item %s holds a line feed, and pushing it again failed: %w", j.PublicID(), err)
	}
	return job.PublicID(pushed.ClientID, pushed.ID), nil
}
