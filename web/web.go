// Package web is gmq's HTTP front end: the JSON API for producers, consumers
// and operators (gin), and later the dashboard. It parses and formats; every
// decision is the dispatcher's.
package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/internal/jobjson"
	"github.com/gmq/gmq/job"
)

// Options configure the HTTP front end.
type Options struct {
	Version         string
	MaxBody         int // largest job body, bytes
	MaxBatch        int // most jobs in one batch push
	DefaultTTR      time.Duration
	DefaultPriority uint32
	RequestTimeout  time.Duration // each request's deadline; a long poll gets its wait on top
	Token           string        // when set, the API and the dashboard require it
	// Loopback says the API listens on loopback only: requests must then name
	// a loopback host (or one of AllowedHosts), against DNS rebinding.
	Loopback       bool
	AllowedHosts   []string
	MaxRequestBody int // bytes: the largest request body of any kind
	BodyMemory     int // bytes: all request bodies being read at once (bodyBudget)
	// ReadTimeout bounds a request's arrival (headers and body), IdleTimeout
	// an idle keep-alive connection, ShutdownTimeout how long Close lets
	// requests in flight finish.
	ReadTimeout, IdleTimeout, ShutdownTimeout time.Duration
	// Others are the other front ends, by protocol, whose connections the
	// stats count.
	Others map[string]Counter
	Log    *slog.Logger
}

// A Counter knows how many clients a front end has now.
type Counter interface{ Connections() int }

// Server serves the HTTP API. Serve it on a listener; Close it once.
type Server struct {
	http     *http.Server
	conns    atomic.Int64       // open connections (http.Server.ConnState)
	endWaits context.CancelFunc // ends the requests still waiting when Close's grace is over

	d        *dispatcher.Dispatcher
	opts     Options
	log      *slog.Logger
	engine   *gin.Engine
	started  time.Time
	budget   *bodyBudget
	sessions *sessions  // the dashboard's
	logins   loginGuard // wrong tokens per client address
}

// New builds the HTTP API over d. Every option must be set (the defaults
// are config.Default's) but Token, AllowedHosts, Others and Log.
func New(d *dispatcher.Dispatcher, opts Options) *Server {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	gin.SetMode(gin.ReleaseMode)
	s := &Server{d: d, opts: opts, log: opts.Log, engine: gin.New(), started: time.Now(), budget: newBodyBudget(opts.BodyMemory),
		sessions: newSessions(opts.Token)}
	// Topic names may hold '/': clients send it as %2F inside a path segment.
	s.engine.UseRawPath = true
	s.engine.UnescapePathValues = true
	// Handlers pass *gin.Context as the context: let it carry the request's
	// cancellation and deadline.
	s.engine.ContextWithFallback = true
	s.engine.Use(gin.Recovery(), s.logRequests, securityHeaders, s.checkHost, s.deadline)
	s.routes()
	// Long polls end with the shutdown grace at the latest: their context is
	// the request's, which Close cancels when the grace is over.
	base, endWaits := context.WithCancel(context.Background())
	s.endWaits = endWaits
	s.http = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second,
		// A long poll's wait is not cut by ReadTimeout: net/http lifts the read
		// deadline once a request's body is read (TestSlowIdleAndLongPollConnections).
		ReadTimeout: opts.ReadTimeout, IdleTimeout: opts.IdleTimeout,
		BaseContext: func(net.Listener) context.Context { return base },
		ConnState:   s.countConn}
	return s
}

// Handler is the http.Handler to serve.
func (s *Server) Handler() http.Handler { return headAsGet(s.engine) }

func (s *Server) routes() {
	r := s.engine
	r.GET("/healthz", s.healthz)
	r.GET("/readyz", s.readyz)
	s.dashboardRoutes()
	guarded := []gin.HandlerFunc{s.sameOrigin, requireJSON, s.requireToken} // every API route's
	api := r.Group("/api/v1", guarded...)
	api.POST("/jobs", s.push)
	api.POST("/jobs/batch", s.pushBatch)
	api.GET("/jobs/:id", s.getJob)
	api.DELETE("/jobs/:id", s.deleteJob)
	api.POST("/jobs/:id/ack", s.ack)
	r.POST(ackManyPath, append(guarded, s.ackMany)...)
	api.POST("/jobs/:id/release", s.release)
	api.POST("/jobs/:id/bury", s.bury)
	api.POST("/jobs/:id/touch", s.touch)
	api.POST("/jobs/:id/kick", s.kickJob)
	r.POST(popPath, append(guarded, s.popPost)...)
	r.GET(popPath, append(guarded, s.popGet)...)
	api.GET("/topics", s.topics)
	api.GET("/topics/:topic", s.topic)
	api.POST("/topics/:topic/kick", s.kickTopic)
	api.POST("/topics/:topic/pause", s.pause)
	api.GET("/topics/:topic/peek/:state", s.peekTopic)
	api.GET("/stats", s.stats)
	api.GET("/buckets", s.buckets)
	api.GET("/redis", s.redisInfo)
	r.NoRoute(func(c *gin.Context) {
		c.JSON(http.StatusNotFound, gin.H{"error": "no such endpoint: " + c.Request.URL.Path})
	})
}

func (s *Server) logRequests(c *gin.Context) {
	start := time.Now()
	c.Next()
	level := slog.LevelDebug
	if c.Writer.Status() >= 500 {
		level = slog.LevelWarn
	}
	s.log.Log(c, level, "http", "method", c.Request.Method, "path", c.Request.URL.Path,
		"status", c.Writer.Status(), "took", time.Since(start))
}

// popPath and ackPath are the routes whose requests may wait (a long poll,
// an ack that pops the next job) and so set their own deadline.
const (
	popPath     = "/api/v1/pop"
	ackPath     = "/api/v1/jobs/:id/ack"
	ackManyPath = "/api/v1/ack"
)

// deadline bounds every request but a long poll by the request timeout, so a
// Redis that stops answering turns into a 503, not a hung client.
func (s *Server) deadline(c *gin.Context) {
	if p := c.FullPath(); p == popPath || p == ackPath || p == ackManyPath {
		c.Next()
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.opts.RequestTimeout)
	defer cancel()
	c.Request = c.Request.WithContext(ctx)
	c.Next()
}

// fail answers with the status that err calls for and {"error": ...}. An
// ack that went through before the failure says so with "acked": a client
// must not retry it, only what followed it.
func (s *Server) fail(c *gin.Context, err error) {
	c.AbortWithStatusJSON(s.failure(c, err, gin.H{}))
}

// failure fills out with the error's message and answers the status it calls
// for. 5xx are logged with their cause; a 503 asks the client to retry in a
// second.
func (s *Server) failure(c *gin.Context, err error, out gin.H) (int, gin.H) {
	code := statusOf(err)
	if code >= 500 {
		s.log.Warn("request failed", "path", c.Request.URL.Path, "err", err)
	}
	if code == http.StatusServiceUnavailable {
		c.Header("Retry-After", "1")
	}
	out["error"] = publicMessage(err)
	var acked *job.AckedError
	if errors.As(err, &acked) && c.Param("id") != "" {
		out["acked"] = c.Param("id")
	}
	return code, out
}

// publicMessage is what a client is told of err: its message, but for Redis
// at maxmemory, whose raw reply names script hashes and lines (the log keeps it).
func publicMessage(err error) string {
	if errors.Is(err, job.ErrOutOfMemory) {
		return "redis is out of memory (its maxmemory is reached): retry later; pops and acks still work"
	}
	return err.Error()
}

func statusOf(err error) int {
	var tooLarge *http.MaxBytesError
	switch {
	case errors.Is(err, job.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, job.ErrDuplicate), errors.Is(err, job.ErrStale), errors.Is(err, job.ErrNotReserved):
		return http.StatusConflict
	case errors.Is(err, errBadRequest), errors.Is(err, job.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, job.ErrTooBig), errors.As(err, &tooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, errBodyTimeout):
		return http.StatusRequestTimeout
	case errors.Is(err, job.ErrTooManyWaiting):
		return http.StatusTooManyRequests
	case errors.Is(err, job.ErrUnavailable), errors.Is(err, job.ErrOutOfMemory), errors.Is(err, job.ErrBusy),
		errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// pushLimit bounds one push request.
func (s *Server) pushLimit() int64 { return jobjson.PushLimit(s.opts.MaxBody) }

func (s *Server) defaults() jobDefaults {
	return jobDefaults{TTR: s.opts.DefaultTTR, Priority: s.opts.DefaultPriority}
}

func (s *Server) push(c *gin.Context) {
	data, err := s.body(c, s.pushLimit())
	if err != nil {
		s.fail(c, err)
		return
	}
	j, err := parsePush(data, s.defaults())
	if err != nil {
		s.fail(c, err)
		return
	}
	id, err := s.d.Push(c, j)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, gin.H{"id": job.PublicID(j.ClientID, id), "internal_id": id})
}

func (s *Server) pushBatch(c *gin.Context) {
	data, err := s.body(c, int64(s.opts.MaxBatch)*s.pushLimit())
	if err != nil {
		s.fail(c, err)
		return
	}
	jobs, err := parseBatch(data, s.defaults(), s.opts.MaxBatch)
	if err != nil {
		s.fail(c, err)
		return
	}
	nums, err := s.d.PushBatch(c, jobs)
	ids := make([]string, 0, len(nums))
	for i, n := range nums {
		if n != 0 {
			ids = append(ids, job.PublicID(jobs[i].ClientID, n))
		}
	}
	if err != nil {
		// Say which jobs were stored before the failure, so a retry can skip them.
		c.AbortWithStatusJSON(s.failure(c, err, gin.H{"stored_ids": ids}))
		return
	}
	c.JSON(http.StatusCreated, gin.H{"ids": ids})
}

func (s *Server) popPost(c *gin.Context) {
	data, err := s.body(c, 64<<10)
	if err != nil {
		s.fail(c, err)
		return
	}
	req, err := parsePop(data)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.pop(c, req)
}

func (s *Server) popGet(c *gin.Context) {
	req := popRequest{Topics: c.QueryArray("topic")}
	if len(req.Topics) == 0 {
		s.fail(c, errors.Join(errBadRequest, errors.New("give at least one ?topic=")))
		return
	}
	if t := c.Query("timeout"); t != "" {
		secs, err := strconv.ParseFloat(t, 64)
		if err != nil || secs < 0 || math.IsNaN(secs) || math.IsInf(secs, 0) {
			s.fail(c, errors.Join(errBadRequest, errors.New("timeout must be a number of seconds, got "+strconv.Quote(t))))
			return
		}
		req.Timeout = time.Duration(min(secs, maxSeconds) * float64(time.Second))
	}
	if n := c.Query("count"); n != "" {
		count, err := strconv.Atoi(n)
		if err != nil || count < 1 {
			s.fail(c, errors.Join(errBadRequest, errors.New("count must be a whole number of at least 1, got "+strconv.Quote(n))))
			return
		}
		req.Count = count
	}
	s.pop(c, req)
}

func (s *Server) pop(c *gin.Context, req popRequest) {
	if req.Count > 0 {
		if err := s.checkCount(req.Count); err != nil {
			s.fail(c, err)
			return
		}
		s.answerWaitMany(c, req.Timeout, func(ctx context.Context) ([]*job.Job, error) {
			return s.d.PopMany(ctx, req.Topics, req.Count, req.Timeout)
		})
		return
	}
	s.answerWait(c, req.Timeout, func(ctx context.Context) (*job.Job, error) {
		return s.d.Pop(ctx, req.Topics, req.Timeout)
	})
}

func (s *Server) checkCount(n int) error {
	if n > s.opts.MaxBatch {
		return fmt.Errorf("%w: count %d is over the limit of %d jobs a request ([jobs] max_batch)", errBadRequest, n, s.opts.MaxBatch)
	}
	return nil
}

// answerWait runs a call that may wait up to timeout for a job (a pop, an ack
// that pops the next) under a deadline of timeout plus the request timeout,
// and answers like a pop: 200 with the job, 204 when none came, or the error.
func (s *Server) answerWait(c *gin.Context, timeout time.Duration, call func(context.Context) (*job.Job, error)) {
	j, ok := waitFor(s, c, timeout, call)
	if !ok {
		return
	}
	if j == nil {
		c.Status(http.StatusNoContent)
		return
	}
	c.JSON(http.StatusOK, viewJob(j))
}

// answerWaitMany is answerWait for a batch pop: 200 with {"jobs": [...]}, or
// 204 when none came.
func (s *Server) answerWaitMany(c *gin.Context, timeout time.Duration, call func(context.Context) ([]*job.Job, error)) {
	jobs, ok := waitFor(s, c, timeout, call)
	if !ok {
		return
	}
	if len(jobs) == 0 {
		c.Status(http.StatusNoContent)
		return
	}
	c.JSON(http.StatusOK, gin.H{"jobs": viewJobs(jobs)})
}

// waitFor runs call under a deadline of timeout plus the request timeout. On
// an error it answers it (unless the consumer went away) and says false.
func waitFor[T any](s *Server, c *gin.Context, timeout time.Duration, call func(context.Context) (T, error)) (T, bool) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), timeout+s.opts.RequestTimeout)
	defer cancel()
	got, err := call(ctx)
	if err != nil {
		if c.Request.Context().Err() == nil { // else the consumer went away; nothing to answer
			s.fail(c, err)
		}
		return got, false
	}
	return got, true
}

func viewJobs(jobs []*job.Job) []jobView {
	out := make([]jobView, len(jobs))
	for i, j := range jobs {
		out[i] = viewJob(j)
	}
	return out
}

func (s *Server) getJob(c *gin.Context) {
	j, err := s.d.Peek(c, c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, viewJob(j))
}

func (s *Server) deleteJob(c *gin.Context) {
	if err := s.d.Delete(c, c.Param("id")); err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"deleted": c.Param("id")})
}

// jobCall reads the optional arguments of a job action from the body or the query.
func (s *Server) jobCall(c *gin.Context) (jobCall, bool) {
	data, err := s.body(c, 64<<10)
	if err != nil {
		s.fail(c, err)
		return jobCall{}, false
	}
	call, err := parseJobCall(data)
	if err == nil && c.Query("attempt") != "" {
		call.Attempt, err = strconv.Atoi(c.Query("attempt"))
		if err != nil || call.Attempt < 0 {
			err = errors.Join(errBadRequest, errors.New("attempt must be a whole number"))
		}
	}
	if err != nil {
		s.fail(c, err)
		return jobCall{}, false
	}
	return call, true
}

func (s *Server) ack(c *gin.Context) {
	call, ok := s.jobCall(c)
	if !ok {
		return
	}
	if call.Next != nil {
		s.ackAndPop(c, call)
		return
	}
	if err := s.d.Ack(c, c.Param("id"), call.Attempt); err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"acked": c.Param("id")})
}

// ackAndPop acks the job and answers like a pop: the next job (200) or
// nothing within the timeout (204), or with a count, like a batch pop. A
// failed ack pops nothing.
func (s *Server) ackAndPop(c *gin.Context, call jobCall) {
	next := call.Next
	if next.Count > 0 {
		if err := s.checkCount(next.Count); err != nil {
			s.fail(c, err)
			return
		}
		s.answerWaitMany(c, next.Timeout, func(ctx context.Context) ([]*job.Job, error) {
			if err := s.d.Ack(ctx, c.Param("id"), call.Attempt); err != nil {
				return nil, err
			}
			jobs, err := s.d.PopMany(ctx, next.Topics, next.Count, next.Timeout)
			if err != nil {
				return nil, &job.AckedError{Err: err}
			}
			return jobs, nil
		})
		return
	}
	s.answerWait(c, next.Timeout, func(ctx context.Context) (*job.Job, error) {
		return s.d.AckAndPop(ctx, c.Param("id"), call.Attempt, next.Topics, next.Timeout)
	})
}

// ackMany acks several jobs at once (a batch consumer's ack), each on its
// own: 200 with the ids acked and, for the others, why not. With "next" it
// then pops like a batch pop and adds "jobs" (empty when none came).
func (s *Server) ackMany(c *gin.Context) {
	data, err := s.body(c, 1<<20)
	if err != nil {
		s.fail(c, err)
		return
	}
	acks, next, err := parseAcks(data, s.opts.MaxBatch)
	if err == nil && next != nil && next.Count > 0 {
		err = s.checkCount(next.Count)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.opts.RequestTimeout)
	defer cancel()
	errs := make([]error, len(acks))
	var wg sync.WaitGroup
	for i, a := range acks { // at once, so that they share script calls
		wg.Go(func() { errs[i] = s.d.Ack(ctx, a.ID, a.Attempt) })
	}
	wg.Wait()
	acked := make([]string, 0, len(acks))
	failed := []gin.H{}
	for i, err := range errs {
		if err != nil {
			failed = append(failed, gin.H{"id": acks[i].ID, "status": statusOf(err), "error": publicMessage(err)})
		} else {
			acked = append(acked, acks[i].ID)
		}
	}
	out := gin.H{"acked": acked, "failed": failed}
	if next == nil {
		c.JSON(http.StatusOK, out)
		return
	}
	ctx, cancel = context.WithTimeout(c.Request.Context(), next.Timeout+s.opts.RequestTimeout)
	defer cancel()
	jobs, err := s.d.PopMany(ctx, next.Topics, max(next.Count, 1), next.Timeout)
	if err != nil {
		// The acks above stand: say which went through, so that only the pop is retried.
		if c.Request.Context().Err() == nil {
			c.AbortWithStatusJSON(s.failure(c, err, out))
		}
		return
	}
	out["jobs"] = viewJobs(jobs)
	c.JSON(http.StatusOK, out)
}

func (s *Server) release(c *gin.Context) {
	s.jobAction(c, func(call jobCall) (*job.Job, error) {
		return s.d.Release(c, c.Param("id"), call.Attempt, call.Priority, call.Delay)
	})
}

func (s *Server) bury(c *gin.Context) {
	s.jobAction(c, func(call jobCall) (*job.Job, error) {
		return s.d.Bury(c, c.Param("id"), call.Attempt, call.Priority)
	})
}

func (s *Server) touch(c *gin.Context) {
	s.jobAction(c, func(call jobCall) (*job.Job, error) { return s.d.Touch(c, c.Param("id"), call.Attempt) })
}

// jobAction reads a job action's arguments, runs it and answers with the job
// as the action left it.
func (s *Server) jobAction(c *gin.Context, act func(jobCall) (*job.Job, error)) {
	call, ok := s.jobCall(c)
	if !ok {
		return
	}
	j, err := act(call)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, viewJob(j))
}

func (s *Server) kickJob(c *gin.Context) {
	j, err := s.d.KickJob(c, c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, viewJob(j))
}
