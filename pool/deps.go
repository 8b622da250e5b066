package pool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
)

// A job pushed with After waits (job.Waiting) until every job it names has
// completed (lua/lib_deps.lua). Its push first tells each dependency, in
// its own bucket, that the new job waits for it (deps.lua register, which
// also says how each stands: one that completed already counts as done),
// then stores the job with the dependencies still pending. Each
// dependency's end, by whatever path, leaves the dependent a notice in the
// dependency's bucket's follow-ups (lib.lua announce_end), which a timer
// hands to the dependent (tellDependent: deps.lua tell, in its bucket),
// then removes. A notice told twice changes nothing, so a crash between
// the two repeats it harmlessly. A notice can come before its dependent is
// stored (the dependency ended between the two steps of the push): it is
// put off, as a refused follow-up is, and dropped once depNoticeFor has
// passed, by when the push has long given up (depPushWithin).

// DependsFormat is the store format from which a push may carry After: an
// older broker would end a dependency without telling the jobs that wait
// for it.
const DependsFormat = 5

// ErrAfterNeedsFormat is a push with After on a store below DependsFormat.
var ErrAfterNeedsFormat = fmt.Errorf("%w: after needs the store at format %d, and a broker that reads only an older one is still recorded (docs/operations.md, Upgrades)",
	job.ErrBusy, DependsFormat)

// depNoticePrefix starts a notice's id among the bucket's follow-ups
// (lib.lua DEP_NOTICE): "d DEPENDENT DEPENDENCY".
const depNoticePrefix = "d "

// depPushWithin bounds how long a push with After may take from telling
// its dependencies to storing its job; past it the push gives up (its
// notices would be dropped).
const depPushWithin = time.Minute

// depNoticeFor is how long a notice whose dependent is not stored is kept:
// far past depPushWithin.
const depNoticeFor = 10 * time.Minute

// depNotice is a notice as lib.lua's announce_end keeps it.
type depNotice struct {
	Dependent string  `json:"dependent"` // its member
	Topic     string  `json:"topic"`
	How       string  `json:"how"`
	Result    *string `json:"result"` // a completion's result, a JSON value's text
	At        int64   `json:"at"`     // ms, Redis's clock
}

// afterState is F_AFTER, as lib_deps.lua reads it.
type afterState struct {
	All       []string           `json:"a"` // every job it waits for, as pushed
	Pending   []string           `json:"p"`
	OnFailure string             `json:"f"`
	Results   map[string]*string `json:"r"` // nil (null) unless WithResults: lib_deps.lua keeps them only then
}

// dependOn tells the jobs j names in After that m (j, to be stored under
// that member) waits for them, and returns F_AFTER for its push ("": none).
// A dependency that is not there, or that ended otherwise than completed
// (unless j runs anyway: job.DependencyRun), refuses the push.
func (p *Pool) dependOn(ctx context.Context, j job.Spec, m string) (string, error) {
	if len(j.After) == 0 {
		return "", nil
	}
	if p.Format() < DependsFormat {
		return "", ErrAfterNeedsFormat
	}
	if len(p.fanout.get(j.Topic)) > 0 {
		return "", errAfterFanout(j.Topic)
	}
	byBucket := map[int][]string{}
	var order []string
	for _, id := range j.After {
		n, err := p.Resolve(ctx, id)
		if errors.Is(err, job.ErrNotFound) {
			return "", fmt.Errorf("%w: after: job %s is not found (a dependency must exist when its dependent is pushed)", job.ErrInvalid, id)
		}
		if err != nil {
			return "", fmt.Errorf("after: %w", err)
		}
		dm := member(n)
		if dm == m || slices.Contains(order, dm) {
			continue
		}
		order = append(order, dm)
		b := int(n % uint64(p.opts.Buckets))
		byBucket[b] = append(byBucket[b], dm)
	}
	type answer struct {
		members []string
		reply   []rueidis.RedisMessage
		err     error
	}
	answers := make([]*answer, 0, len(byBucket))
	var wg sync.WaitGroup
	for b, members := range byBucket {
		a := &answer{members: members}
		answers = append(answers, a)
		wg.Go(func() {
			args := append(depsScript.args(p.caller(), "register", "dependent", m, "topic", j.Topic), members...)
			a.reply, a.err = depsScript.Exec(ctx, p.client, p.keys.withTopics(b), args).ToArray()
		})
	}
	wg.Wait()
	state := afterState{OnFailure: j.OnDependencyFailure, Pending: []string{}}
	if state.OnFailure == "" {
		state.OnFailure = job.DependencyCancel
	}
	if j.WithResults {
		state.Results = map[string]*string{}
	}
	for _, a := range answers {
		if a.err != nil {
			return "", wrapRedis("after: tell the dependencies", a.err)
		}
		told := decodeDepsRegisterReply(a.reply).Answers
		for i, dm := range a.members {
			var how, result string
			if i < len(told) {
				how, result = told[i][0], told[i][1]
			}
			id := strings.TrimLeft(dm, "0")
			switch how {
			case "pending":
				state.Pending = append(state.Pending, dm)
			case "completed":
				if state.Results != nil {
					state.Results[dm] = textOrNil(result)
				}
			case "unknown":
				return "", fmt.Errorf("%w: after: job %s is not found (never pushed, or it ended and is gone: only a completed job its topic keeps, keep_completed, counts as done)", job.ErrInvalid, id)
			case "crowded":
				return "", fmt.Errorf("%w: after: job %s has as many jobs waiting for it as it may hold (%d)", job.ErrTooMany, id, job.MaxDependents)
			default: // dead, cancelled, expired
				if state.OnFailure != job.DependencyRun {
					// The four clients read "after: job " in this 409 as a dependency's,
					// not the pushed job's own id (a retried push is not taken as stored).
					return "", fmt.Errorf("%w: after: job %s is %s, so this job would be cancelled at once (on_dependency_failure \"run\" runs it anyway)", job.ErrConflict, id, how)
				}
			}
		}
	}
	slices.Sort(state.Pending)
	state.All = order
	data, err := json.Marshal(state)
	return string(data), err
}

// members reads a JSON list of members as numbers (an empty list is {}
// as Lua's cjson writes it).
func members(list json.RawMessage) []uint64 {
	var ms []string
	_ = json.Unmarshal(list, &ms)
	var out []uint64
	for _, m := range ms {
		if n, err := strconv.ParseUint(m, 10, 64); err == nil {
			out = append(out, n)
		}
	}
	return out
}

func textOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// errAfterFanout is a push with After to a topic with fanout children:
// its dependencies would know of one job of the several it makes.
func errAfterFanout(topic string) error {
	return fmt.Errorf("%w: after: topic %q has fanout children; a job that waits for others goes to one topic", job.ErrInvalid, topic)
}

// tellDependent hands a notice (its id and spec as kept) to the job it is
// for. It returns the job's topic, where the job went as a push would say
// it (ID 0: unchanged or removed; Kept: made ready; Due: made delayed),
// and whether the notice is done with (told, or too old to wait for its
// job: see depNoticeFor).
func (p *Pool) tellDependent(ctx context.Context, id, spec string) (topic string, got Pushed, done bool, err error) {
	var n depNotice
	if err := json.Unmarshal([]byte(spec), &n); err != nil {
		return "", got, false, fmt.Errorf("notice %s: unreadable: %w", id, err) // kept, put off: lib.lua wrote it
	}
	dependency := strings.TrimPrefix(id, depNoticePrefix+n.Dependent+" ")
	num, err := parseMember(n.Dependent)
	if err != nil {
		return n.Topic, got, false, fmt.Errorf("notice %s: %w", id, err)
	}
	result := ""
	if n.Result != nil {
		result = *n.Result
	}
	b := int(num % uint64(p.opts.Buckets))
	r, err := depsScript.Exec(ctx, p.client, p.keys.withTopics(b, n.Topic), depsScript.args(p.caller(), "tell",
		"member", n.Dependent, "topic", n.Topic, "dependency", dependency, "how", n.How, "result", result)).ToArray()
	if err != nil {
		return n.Topic, got, false, wrapRedis("tell a waiting job", err)
	}
	told := decodeDepsTellReply(r)
	switch told.Status {
	case replyOK:
	case replyAbsent:
		// Not stored yet (its push is on its way), or never will be.
		if time.Since(time.UnixMilli(n.At)) > depNoticeFor {
			return n.Topic, got, true, nil
		}
		return n.Topic, got, false, fmt.Errorf("job %d, which waits for %s, is not stored yet", num, strings.TrimLeft(dependency, "0"))
	default:
		return n.Topic, got, false, fmt.Errorf("notice %s: %s", id, told.Status) // TOPIC: a dependent's topic never changes
	}
	p.dropAlias(ctx, told.CID, num)
	switch job.State(told.State) {
	case job.Ready:
		got = Pushed{ID: num, Kept: true}
	case job.Delayed:
		got = Pushed{ID: num, Due: time.UnixMilli(told.Due), Now: time.UnixMilli(told.Now)}
	}
	return n.Topic, got, true, nil
}

// parseAfter reads F_AFTER for a job's view.
func parseAfter(text string) *job.Dependencies {
	if text == "" {
		return nil
	}
	var raw struct {
		All       json.RawMessage    `json:"a"`
		Pending   json.RawMessage    `json:"p"`
		OnFailure string             `json:"f"`
		Results   map[string]*string `json:"r"`
	}
	if json.Unmarshal([]byte(text), &raw) != nil {
		return nil
	}
	d := &job.Dependencies{OnFailure: raw.OnFailure}
	d.After, d.Pending = members(raw.All), members(raw.Pending)
	if raw.Results != nil {
		d.Results = map[uint64]json.RawMessage{}
		for m, r := range raw.Results {
			n, err := strconv.ParseUint(m, 10, 64)
			if err != nil {
				continue
			}
			if r == nil || !json.Valid([]byte(*r)) {
				d.Results[n] = json.RawMessage("null")
			} else {
				d.Results[n] = json.RawMessage(*r)
			}
		}
	}
	return d
}
