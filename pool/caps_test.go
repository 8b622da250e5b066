package pool

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

// TestBatchMembersCapped: an add past a batch's member cap is refused as
// too big (413), not as a full topic (507, which clients retry: no wait
// makes a batch hold fewer), and adds nothing. The cap is lowered here so
// that the test need not push a hundred thousand jobs; the script checks
// it the same at any size.
func TestBatchMembersCapped(t *testing.T) {
	p, ctx := newPool(t)
	p.maxBatchMembers = 3
	spec := func(body string) job.Spec { return job.Spec{Topic: "bm-a", Body: body, TTR: time.Minute} }
	id, _ := batchOf(t, p, ctx, job.BatchSpec{Jobs: []job.Spec{spec("1"), spec("2")}, Open: true})
	if _, err := p.AddToBatch(ctx, id, []job.Spec{spec("3")}); err != nil {
		t.Fatalf("the third job, at the cap: %v", err)
	}
	_, err := p.AddToBatch(ctx, id, []job.Spec{spec("4")})
	if !errors.Is(err, job.ErrTooMany) || !errors.Is(err, job.ErrTooBig) || errors.Is(err, job.ErrFull) ||
		job.KindOf(err) != job.KindTooBig || !strings.Contains(err.Error(), "holds 3 jobs, at most 3") {
		t.Fatalf("the fourth job: %v (kind %v), want too many, too_big", err, job.KindOf(err))
	}
	if b, err := p.Batch(ctx, id); err != nil || b.Total != 3 {
		t.Fatalf("the batch after the refused add: %+v %v", b, err)
	}
}
