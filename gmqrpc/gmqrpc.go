// Package gmqrpc speaks the original gmq's JSON-RPC 1.0 over TCP (one JSON
// object per line, Go's net/rpc/jsonrpc), so gmq producers and consumers
// written for it work unchanged: Service.Push, Service.Pop and Service.Ack; Service.Fail
// reports a failure (retries and the dead set). A pop's "token" names its
// delivery: Ack and Fail given it reach that delivery and no other job.
// It parses and formats; the dispatcher decides.
package gmqrpc

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/rpc"
	"strconv"
	"time"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/internal/jobjson"
	"github.com/gmq/gmq/internal/tcpserver"
	"github.com/gmq/gmq/job"
)

// Options configure the JSON-RPC server.
type Options struct {
	tcpserver.Options
	// PopWait is how long Service.Pop waits for a job before answering
	// "empty", as gmq's Pop did after a short wait.
	PopWait         time.Duration
	DefaultTTR      time.Duration
	DefaultPriority uint32
	// MaxBody is the largest job body; a request may be as large as a push of
	// it (jobjson.PushLimit), and at most MaxRequest bytes. Past that the
	// client gets an error and the connection is closed.
	MaxBody, MaxRequest int
}

// Server serves gmq's JSON-RPC. Serve it on a listener; Close it once.
type Server struct {
	*tcpserver.Front // Serve, Close, Connections, Refuse; its Context ends waiting pops
}

// New returns a JSON-RPC server over d. Every option must be set (the
// defaults are config.Default's); Log may be nil.
func New(d *dispatcher.Dispatcher, opts Options) *Server {
	opts.Log = opts.Logger()
	codecs := codecOptions{limit: int(min(jobjson.PushLimit(opts.MaxBody), int64(opts.MaxRequest))),
		readTimeout: opts.ReadTimeout, budget: opts.Budget,
		refused: &tcpserver.Burst{Log: opts.Log, Every: 10 * time.Second, Msg: "json-rpc request refused: connection closed"}}
	s := &Server{}
	server := rpc.NewServer()
	// A client over the connection limit is told so as a JSON-RPC error.
	s.Front = tcpserver.NewFront(func(nc net.Conn) {
		var codec rpc.ServerCodec = newCodec(s.Context(), nc, codecs)
		if opts.Observe != nil {
			codec = &timedCodec{ServerCodec: codec, observe: opts.Observe, started: map[uint64]timedCall{}}
		}
		server.ServeCodec(codec)
	}, opts.Log, `{"id":null,"result":null,"error":"too many connections ([server] max_connections)"}`+"\n")
	if err := server.RegisterName("Service", &Service{d: d, opts: opts, ctx: s.Context()}); err != nil {
		panic(fmt.Sprintf("gmqrpc: register: %v", err)) // Service's methods are fixed; a failure is a bug here
	}
	return s
}

// Service is the RPC receiver: its exported methods are the protocol.
type Service struct {
	d    *dispatcher.Dispatcher
	opts Options
	ctx  context.Context
}

// Push stores a job: params [{"id", "topic", "body", "delay", "TTR"}], values
// strings (as gmq's producers send them) or numbers; "priority" is optional.
// The body is a string, or a JSON object or array (Pop gives it back as
// one). The fields follow the HTTP API's rules (package jobjson). The
// result is "success", as gmq answered; failures are JSON-RPC errors.
func (s *Service) Push(args JobArgs, reply *string) error { return coded(s.push(args, reply)) }

func (s *Service) push(args JobArgs, reply *string) error {
	if args.err != nil {
		return args.err
	}
	j, err := jobjson.Job(args.fields, jobjson.Defaults{TTR: s.opts.DefaultTTR, Priority: s.opts.DefaultPriority})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.RequestTimeout)
	defer cancel()
	if _, err := s.d.Push(ctx, j); err != nil {
		return err
	}
	*reply = "success"
	return nil
}

// JobArgs are Push's params, read by jobjson from their own bytes, so the
// rules of the HTTP API hold here too: names that differ only in case are
// refused, not resolved at random, and so is invalid UTF-8.
type JobArgs struct {
	fields jobjson.Fields
	err    error // returned by Push, so the client gets it as the call's error
}

func (a *JobArgs) UnmarshalJSON(data []byte) error {
	a.fields, a.err = jobjson.Decode(data)
	return nil
}

// Pop reserves a job from the first listed topic that has one: params
// [["topic_1", "topic_2"]]. The result is the job as a map of strings, as
// gmq's was, but for a body pushed as a JSON object or array, which is that
// JSON; with nothing ready after a short wait, the error "empty". Its
// "token" names the delivery, for Ack and Fail.
func (s *Service) Pop(topics []string, reply *map[string]any) error {
	return coded(s.pop(topics, reply))
}

func (s *Service) pop(topics []string, reply *map[string]any) error {
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.PopWait+s.opts.RequestTimeout)
	defer cancel()
	jobs, err := s.d.Pop(ctx, dispatcher.PopParams{Topics: topics, Timeout: s.opts.PopWait})
	if err != nil {
		return err
	}
	if len(jobs) == 0 {
		return errEmpty
	}
	j := jobs[0]
	*reply = map[string]any{
		"id": j.PublicID(), "topic": j.Topic, "body": job.BodyValue(j.Body, j.BodyJSON),
		"delay": seconds(j.Delay), "TTR": seconds(j.TTR), "priority": strconv.FormatUint(uint64(j.Priority), 10),
		"attempt": strconv.Itoa(j.Attempt()), "consumeNum": strconv.Itoa(j.Reserves), "state": j.State.String(),
		"token": j.Delivery().Token(),
	}
	if j.TraceParent != "" {
		(*reply)["traceparent"] = j.TraceParent
	}
	if j.Group != "" {
		(*reply)["group"] = j.Group
	}
	return nil
}

// Ack finishes a job: params ["<job id>"], as gmq's, or [{"id": "...",
// "token": "...", "attempt": n, "result": any, "push": [job, ...]}]
// (token, attempt, result and push optional, as for HTTP's ack: with the
// token Pop gave, the ack reaches that delivery and no other job; result
// is kept with the job where its topic keeps completed jobs; push are
// follow-ups, each a job as Push takes it, pushed once the ack succeeds).
// The result is "success"; with push or result, {"acked": id} with
// "pushed": [ids] (and "again": true when an earlier ack had completed the
// job, whose follow-ups stand) and, when the job is kept completed
// (keep_results, keep_completed), "kept_for": seconds, as HTTP's ack answers.
func (s *Service) Ack(args AckArgs, reply *any) error { return coded(s.ack(args, reply)) }

func (s *Service) ack(args AckArgs, reply *any) error {
	if args.err != nil {
		return args.err
	}
	var push *dispatcher.FollowUps
	if jobs, err := args.fields.FollowUps("push", jobjson.Defaults{TTR: s.opts.DefaultTTR, Priority: s.opts.DefaultPriority}); err != nil {
		return err
	} else if jobs != nil {
		push = &dispatcher.FollowUps{Jobs: jobs}
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.RequestTimeout)
	defer cancel()
	a := dispatcher.Ack{ID: args.ID, Attempt: args.Attempt, Token: args.Token, Result: args.Result}
	var kept time.Duration
	if _, err := s.d.Settle(ctx, dispatcher.SettleParams{Ack: a, Action: dispatcher.ActionAck, Push: push, Kept: &kept}); err != nil {
		return inClientTerms("ack", args.ID, err)
	}
	if push == nil && args.Result == "" { // gmq's own answer, for gmq's clients
		*reply = "success"
		return nil
	}
	out := map[string]any{"acked": args.ID}
	if kept > 0 {
		out["kept_for"] = float64(kept.Milliseconds()) / 1000
	}
	if push == nil {
		*reply = out
		return nil
	}
	ids := make([]string, len(push.Pushed))
	for i, p := range push.Pushed {
		ids[i] = job.PublicID(p.ClientID, p.ID)
	}
	out["pushed"] = ids
	if push.Again {
		out["again"] = true
	}
	*reply = out
	return nil
}

// AckArgs name the delivery to ack: a job's id as a string (gmq's), or
// {"id", "token", "attempt", "result", "push"}, read as FailArgs are.
type AckArgs struct {
	ID      string
	Attempt int
	Token   job.Delivery
	Result  string         // a JSON value's compact text ("" none)
	fields  jobjson.Fields // the object's, for its follow-ups ("push": read with the service's defaults)
	err     error          // returned by Ack, so the client gets it as the call's error
}

func (a *AckArgs) UnmarshalJSON(data []byte) error {
	if err := json.Unmarshal(data, &a.ID); err == nil {
		return nil
	}
	f, err := jobjson.Decode(data)
	if err == nil {
		err = f.Only("Service.Ack", "id", "attempt", "token", "result", "push")
	}
	if err == nil {
		a.ID, a.Attempt, a.Token, err = delivery(f)
	}
	if err == nil {
		a.Result, err = f.Result()
	}
	a.fields = f
	a.err = err
	return nil
}

// delivery reads the "id", "attempt" and "token" of Ack's and Fail's
// object params.
func delivery(f jobjson.Fields) (id string, attempt int, token job.Delivery, err error) {
	id, _, err = f.Str("id")
	if err == nil && id == "" {
		err = fmt.Errorf("%w: id is missing", jobjson.ErrBadRequest) // as HTTP's batch ack says it
	}
	if err != nil {
		return
	}
	n, _, err := f.Whole("attempt", 0, math.MaxInt32)
	if err != nil {
		return
	}
	token, err = f.Token()
	return id, int(n), token, err
}

// FailArgs name a failed job and why: {"id": "...", "error": "..."}
// (attempt and token optional, as for HTTP's fail). Names are read without
// regard to case, and any other field is refused by name, as Push's are.
type FailArgs struct {
	ID      string
	Attempt int
	Token   job.Delivery
	Error   string
	err     error // returned by Fail, so the client gets it as the call's error
}

func (a *FailArgs) UnmarshalJSON(data []byte) error {
	f, err := jobjson.Decode(data)
	if err == nil {
		err = f.Only("Service.Fail", "id", "attempt", "token", "error")
	}
	if err == nil {
		a.ID, a.Attempt, a.Token, err = delivery(f)
	}
	if err == nil {
		a.Error, _, err = f.Str("error")
	}
	a.err = err
	return nil
}

// Fail reports that a job failed: it waits its retry policy's backoff, or
// goes to its topic's dead set past max_attempts. The result is the job's
// state after it ("delayed" or "dead").
func (s *Service) Fail(args FailArgs, reply *string) error { return coded(s.fail(args, reply)) }

func (s *Service) fail(args FailArgs, reply *string) error {
	if args.err != nil {
		return args.err
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.RequestTimeout)
	defer cancel()
	a := dispatcher.Ack{ID: args.ID, Attempt: args.Attempt, Token: args.Token}
	j, err := s.d.Settle(ctx, dispatcher.SettleParams{Ack: a, Action: dispatcher.ActionFail, Reason: args.Error})
	if err != nil {
		return inClientTerms("fail", args.ID, err)
	}
	*reply = j.State.String()
	return nil
}

// UpdateArgs change a waiting job: {"id": "...", "delay", "priority",
// "body"}, the fields given (as HTTP's PATCH /api/v1/jobs/{id}).
type UpdateArgs struct {
	ID     string
	Update job.Update
	err    error // returned by Update, so the client gets it as the call's error
}

func (a *UpdateArgs) UnmarshalJSON(data []byte) error {
	f, err := jobjson.Decode(data)
	if err == nil {
		a.ID, _, err = f.Str("id")
	}
	if err == nil {
		a.Update, err = f.Update("Service.Update", "id")
	}
	a.err = err
	return nil
}

// Update changes a ready or delayed job's delay (seconds from now; 0:
// ready at once), priority or body in one step. The result is the job's
// state after it ("ready" or "delayed"); a reserved, buried or dead job is
// not changed (an error saying its state).
func (s *Service) Update(args UpdateArgs, reply *string) error { return coded(s.update(args, reply)) }

func (s *Service) update(args UpdateArgs, reply *string) error {
	if args.err != nil {
		return args.err
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.RequestTimeout)
	defer cancel()
	j, err := s.d.UpdateJob(ctx, args.ID, args.Update)
	if err != nil {
		return inClientTerms("update", args.ID, err)
	}
	*reply = j.State.String()
	return nil
}

// inClientTerms words an expected outcome of a call on one job with the
// client's verb and id (`ack "order-42": not found`), not the store's
// (`delete job 40: ...`); any other error is passed on as it is. The client
// gets only the text: net/rpc sends err.Error().
func inClientTerms(verb, id string, err error) error {
	if msg, ok := job.Outcome(err); ok {
		return &clientTerms{msg: fmt.Sprintf("%s %q: %s", verb, id, msg), err: err}
	}
	return err
}

// clientTerms is an error told in the client's terms that keeps its cause,
// whose kind the answer's code says (coded).
type clientTerms struct {
	msg string
	err error
}

func (e *clientTerms) Error() string { return e.msg }
func (e *clientTerms) Unwrap() error { return e.err }

// seconds renders a duration in seconds, as gmq's strings were.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}
