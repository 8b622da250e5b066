// Package web is gmq's HTTP front end: the JSON API for producers, consumers
// and operators (gin), the dashboard, and the HTTP server they run on
// (timeouts, the shutdown grace). It parses and formats; every decision is
// the dispatcher's.
package web

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/internal/budget"
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
	// Deliveries are this broker's HTTP deliveries of a topic (package
	// webhook), shown with the topic; nil: none.
	Deliveries func(topic string) (job.WebhookStats, bool)
	// Loopback says the API listens on loopback only: requests must then name
	// a loopback host (or one of AllowedHosts), against DNS rebinding.
	Loopback       bool
	AllowedHosts   []string
	MaxRequestBody int // bytes: the largest request body of any kind
	BodyMemory     int // bytes: all request bodies being read at once, when Budget is nil
	// Budget is the body memory shared with the other ports (nil: one of
	// BodyMemory for this server alone).
	Budget *budget.Budget
	// ReadTimeout bounds a request's arrival (headers and body), IdleTimeout
	// an idle keep-alive connection, ShutdownTimeout how long Close lets
	// requests in flight finish.
	ReadTimeout, IdleTimeout, ShutdownTimeout time.Duration
	// Others are the other front ends, by protocol, whose connections the
	// stats count.
	Others map[string]Counter
	// Metrics, when set, is served at GET /metrics (behind the token);
	// Observe is told how long each API request took, by route.
	Metrics http.Handler
	Observe func(op, code string, took time.Duration)
	// RedisURL is the Redis the broker uses, its password already hidden
	// (shown on the dashboard).
	RedisURL string
	// OpenAPI, when set, is served at GET /api/v1/openapi.yaml (docs.OpenAPI).
	OpenAPI []byte
	// TLS, when set, serves HTTPS ([server] tls_cert, tls_key); the
	// dashboard's session cookie is then Secure.
	TLS *tls.Config
	// EventsHeartbeat is how often an events stream with nothing to send
	// sends a comment line (0: 15 s).
	EventsHeartbeat time.Duration
	Log             *slog.Logger
}

// A Counter knows how many clients a front end has now.
type Counter interface{ Connections() int }

// Server serves the HTTP API. Serve it on a listener; Close it once.
type Server struct {
	http     *http.Server
	conns    atomic.Int64       // open connections (http.Server.ConnState)
	endWaits context.CancelFunc // ends the requests still waiting when Close's grace is over
	// streams is done when Close begins: event streams, which never end on
	// their own, end then rather than hold the grace.
	streams    context.Context
	endStreams context.CancelFunc

	d        *dispatcher.Dispatcher
	opts     Options
	log      *slog.Logger
	engine   *gin.Engine
	started  time.Time
	budget   *budget.Budget
	sessions *sessions  // the dashboard's
	logins   loginGuard // wrong tokens per client address
}

// minTokenLen is the token length under which New warns (16 random bytes
// written as hex are 32).
const minTokenLen = 16

// New builds the HTTP API over d. Every option must be set (the defaults
// are config.Default's) but Token, AllowedHosts, Others and Log.
func New(d *dispatcher.Dispatcher, opts Options) *Server {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Token != "" && len(opts.Token) < minTokenLen {
		opts.Log.Warn("the token is short: a guesser that ignores the 429s can try tokens as fast as the broker answers; "+
			"use a long random one, e.g. openssl rand -hex 32", "length", len(opts.Token), "want_at_least", minTokenLen)
	}
	if opts.Budget == nil {
		opts.Budget = budget.New(opts.BodyMemory)
	}
	gin.SetMode(gin.ReleaseMode)
	s := &Server{d: d, opts: opts, log: opts.Log, engine: gin.New(), started: time.Now(), budget: opts.Budget,
		sessions: newSessions(opts.Token)}
	// Topic names may hold '/': clients send it as %2F inside a path segment.
	s.engine.UseRawPath = true
	s.engine.UnescapePathValues = true
	// Handlers pass *gin.Context as the context: let it carry the request's
	// cancellation and deadline.
	s.engine.ContextWithFallback = true
	// No deadline here: the route groups set it (routes), since a request
	// that waits for a job needs a longer one than request_timeout.
	s.engine.Use(gin.Recovery(), s.logRequests, securityHeaders, s.checkHost)
	s.routes()
	// Long polls end with the shutdown grace at the latest: their context is
	// the request's, which Close cancels when the grace is over.
	base, endWaits := context.WithCancel(context.Background())
	s.endWaits = endWaits
	s.streams, s.endStreams = context.WithCancel(context.Background())
	s.http = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second,
		// A long poll's wait is not cut by ReadTimeout: net/http lifts the read
		// deadline once a request's body is read (TestSlowIdleAndLongPollConnections).
		ReadTimeout: opts.ReadTimeout, IdleTimeout: opts.IdleTimeout,
		BaseContext: func(net.Listener) context.Context { return base },
		ConnState:   s.countConn}
	return s
}

// observe tells Options.Observe how long a request took, named by its
// route ("POST /api/v1/jobs/:id/ack"), so ids never make new series.
func (s *Server) observe(c *gin.Context) {
	if s.opts.Observe == nil {
		c.Next()
		return
	}
	start := time.Now()
	c.Next()
	s.opts.Observe(c.Request.Method+" "+c.FullPath(), strconv.Itoa(c.Writer.Status()), time.Since(start))
}

// Routes lists the routes the server answers, as "METHOD /path" with
// gin's :name parameters, so a test can hold docs/openapi.yaml to them.
func (s *Server) Routes() []string {
	var out []string
	for _, r := range s.engine.Routes() {
		out = append(out, r.Method+" "+r.Path)
	}
	return out
}

// Handler is the http.Handler to serve.
func (s *Server) Handler() http.Handler { return headAsGet(s.engine) }

func (s *Server) routes() {
	r := s.engine
	s.dashboardRoutes()
	// No redirects: gin's default answers a path with a trailing slash
	// (/api/v1/batches/) with an HTML 301 or a 307 to the path without it,
	// which an API client reads as a page, or follows with its method
	// changed. Every unknown path is a JSON 404 instead, naming the slash;
	// the one redirect a browser needs, /dashboard, is a route (dashboard.go).
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.NoRoute(func(c *gin.Context) {
		msg := "no such endpoint: " + c.Request.URL.Path
		if p := c.Request.URL.Path; len(p) > 1 && strings.HasSuffix(p, "/") {
			msg += " (try it without the trailing slash: " + strings.TrimRight(p, "/") + ")"
		}
		c.JSON(http.StatusNotFound, gin.H{"error": msg})
	})
	// A path that exists under another method is a 405 naming the ones it
	// takes (gin sets Allow), not a 404 that reads as a wrong path.
	r.HandleMethodNotAllowed = true
	r.NoMethod(methodNotAllowed)
	// Ordinary requests: each under the request timeout, so a Redis that
	// stops answering turns into a 503, not a hung client.
	plain := r.Group("", s.deadline)
	plain.GET("/healthz", s.handle(s.healthz))
	plain.GET("/readyz", s.handle(s.readyz))
	if s.opts.Metrics != nil {
		plain.GET("/metrics", s.requireToken, gin.WrapH(s.opts.Metrics))
	}
	guarded := []gin.HandlerFunc{s.observe, s.sameOrigin, requireJSON, s.requireToken} // every API route's
	api := plain.Group("/api/v1", guarded...)
	api.POST("/jobs/batch", s.handle(s.pushBatch))
	api.GET("/jobs/:id", s.handle(s.getJob))
	api.DELETE("/jobs/:id", s.handle(s.deleteJob))
	api.PATCH("/jobs/:id", s.handle(s.updateJob))
	api.POST("/jobs/:id/release", s.handle(s.release))
	api.POST("/jobs/:id/bury", s.handle(s.bury))
	api.POST("/jobs/:id/touch", s.handle(s.touch))
	api.POST("/jobs/:id/kick", s.handle(s.kickJob))
	api.POST("/jobs/:id/fail", s.handle(s.fail))
	api.POST("/jobs/:id/progress", s.handle(s.progress))
	api.POST("/jobs/:id/cancel", s.handle(s.cancel))
	api.POST("/fail", s.handle(s.failMany))
	api.GET("/topics", s.handle(s.topics))
	api.GET("/topics/:topic", s.handle(s.topic))
	api.POST("/topics/:topic/kick", s.handle(s.kickTopic))
	api.POST("/topics/:topic/pause", s.handle(s.pause))
	api.POST("/topics/:topic/flush", s.handle(s.flushTopic))
	api.POST("/topics/:topic/purge", s.handle(s.purge))
	api.GET("/topics/:topic/dead", s.handle(s.dead))
	api.GET("/topics/:topic/jobs", s.handle(s.listJobs))
	api.POST("/topics/:topic/dead/retry", s.handle(s.retryEnded(job.Dead)))
	api.DELETE("/topics/:topic/dead", s.handle(s.deleteEnded(job.Dead)))
	api.GET("/topics/:topic/completed", s.handle(s.completed))
	api.POST("/topics/:topic/completed/retry", s.handle(s.retryEnded(job.Completed)))
	api.DELETE("/topics/:topic/completed", s.handle(s.deleteEnded(job.Completed)))
	api.GET("/topics/:topic/cancelled", s.handle(s.cancelled))
	api.POST("/topics/:topic/cancelled/retry", s.handle(s.retryEnded(job.Cancelled)))
	api.DELETE("/topics/:topic/cancelled", s.handle(s.deleteEnded(job.Cancelled)))
	api.DELETE("/topics/:topic", s.handle(s.deleteTopic))
	api.GET("/topics/:topic/config", s.handle(s.topicConfig))
	api.PUT("/topics/:topic/config", s.handle(s.setTopicConfig))
	api.GET("/topics/:topic/peek/:state", s.handle(s.peekTopic))
	api.POST("/batches", s.handle(s.createBatch))
	api.GET("/batches", s.handle(s.listBatches))
	api.GET("/batches/:id", s.handle(s.getBatch))
	api.POST("/batches/:id/jobs", s.handle(s.addToBatch))
	api.POST("/batches/:id/close", s.handle(s.closeBatch))
	api.DELETE("/batches/:id", s.handle(s.cancelBatch))
	api.GET("/schedules", s.handle(s.schedules))
	api.GET("/schedules/:name", s.handle(s.schedule))
	api.PUT("/schedules/:name", s.handle(s.setSchedule))
	api.DELETE("/schedules/:name", s.handle(s.deleteSchedule))
	api.POST("/schedules/:name/fire", s.handle(s.fireSchedule))
	api.DELETE("/topics/:topic/unique/:key", s.handle(s.releaseUnique))
	api.GET("/stats", s.handle(s.stats))
	api.GET("/history", s.handle(s.history))
	api.GET("/status", s.handle(s.status))
	api.PUT("/status", s.handle(s.setStatus))
	api.GET("/buckets", s.handle(s.buckets))
	api.GET("/redis", s.handle(s.redisInfo))
	if s.opts.OpenAPI != nil {
		api.GET("/openapi.yaml", func(c *gin.Context) { c.Data(http.StatusOK, "application/yaml", s.opts.OpenAPI) })
	}
	// Requests that may wait for a job (a long poll, an ack that pops the
	// next): no group deadline; each sets its own, its wait plus the request
	// timeout (waiting).
	polls := r.Group("/api/v1", guarded...)
	polls.POST("/jobs", s.handle(s.push)) // ?wait=S: until the job's end
	polls.GET("/jobs/:id/wait", s.handle(s.waitEnd))
	polls.GET("/events", s.events)
	polls.POST("/pop", s.handle(s.popPost))
	polls.GET("/pop", s.handle(s.popGet))
	polls.POST("/jobs/:id/ack", s.handle(s.ack))
	polls.POST("/ack", s.handle(s.ackMany))
}

// A handlerFunc answers a request with a status and a body to send as JSON
// (nil: none), or with an error; handle turns either into the response.
type handlerFunc func(c *gin.Context) (status int, body any, err error)

// handle adapts a handlerFunc to gin. An error is answered with the status
// it calls for and {"error": ...}, plus the fields of body when body is a
// gin.H (what a half-done request did, e.g. the jobs stored before a batch
// push failed); nothing is answered to a client that went away while it
// waited.
func (s *Server) handle(h handlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		status, body, err := h(c)
		if err != nil {
			if errors.Is(err, context.Canceled) && c.Request.Context().Err() != nil {
				if s.streams.Err() != nil { // the shutdown grace ended a long poll: say so, not an empty 200
					c.Header("Retry-After", "1")
					c.AbortWithStatusJSON(http.StatusServiceUnavailable, gin.H{"error": "the broker is stopping: retry, on another broker"})
				}
				return // else the client went away: nothing to answer
			}
			extra, _ := body.(gin.H)
			if extra == nil {
				extra = gin.H{}
			}
			c.AbortWithStatusJSON(s.failure(c, err, extra))
			return
		}
		if body == nil {
			c.Status(status)
			return
		}
		c.JSON(status, body)
	}
}

func (s *Server) logRequests(c *gin.Context) {
	start := time.Now()
	c.Next()
	level := slog.LevelDebug
	// A 5xx is the broker's trouble, worth a warning; /readyz's 503 is the
	// answer a probe asks for every few seconds while the broker drains or
	// Redis is away, which the broker logs once itself.
	if c.Writer.Status() >= 500 && c.FullPath() != "/readyz" {
		level = slog.LevelWarn
	}
	args := []any{"method", c.Request.Method, "path", c.Request.URL.Path, "status", c.Writer.Status(), "took", time.Since(start)}
	if err := c.Errors.Last(); err != nil {
		args = append(args, "err", err.Err) // the cause failure kept: one line a failed request
	}
	s.log.Log(c, level, "http", args...)
}

// deadline bounds an ordinary request by the request timeout.
func (s *Server) deadline(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.opts.RequestTimeout)
	defer cancel()
	c.Request = c.Request.WithContext(ctx)
	c.Next()
}

// failure fills out with the error's message and answers the status it calls
// for. 5xx are logged with their cause; a 503 asks the client to retry in a
// second. An ack that went through before the failure says so with "acked":
// a client must not retry it, only what followed it.
func (s *Server) failure(c *gin.Context, err error, out gin.H) (int, gin.H) {
	code := statusOf(err)
	_ = c.Error(err) // logRequests logs it with the request: 5xx at Warn, the rest at Debug
	if code == http.StatusServiceUnavailable {
		c.Header("Retry-After", "1")
	}
	out["error"] = clientMessage(c, err)
	if job.Acked(err) && c.Param("id") != "" {
		out["acked"] = c.Param("id")
	}
	return code, out
}

// publicMessage is what a client is told of err: its message on one line,
// but for Redis at maxmemory, whose raw reply names script hashes and lines
// (the log keeps it), and for the expected outcomes of an operation on one
// job, said without the store's verbs and numbers (job.Outcome): the job of
// a batch's failed list, whose id is beside it, or of a route that names it
// (clientMessage adds the verb and id).
func publicMessage(err error) string {
	if msg, ok := job.Outcome(err); ok {
		return msg
	}
	return oneLine(job.Message(err))
}

// pushLimit bounds one push request.
func (s *Server) pushLimit() int64 { return jobjson.PushLimit(s.opts.MaxBody) }

func (s *Server) defaults() jobDefaults {
	return jobDefaults{TTR: s.opts.DefaultTTR, Priority: s.opts.DefaultPriority}
}

func (s *Server) popPost(c *gin.Context) (int, any, error) {
	data, err := s.body(c, 64<<10)
	if err != nil {
		return 0, nil, err
	}
	req, err := parsePop(data)
	if err != nil {
		return 0, nil, err
	}
	return s.pop(c, req)
}

func (s *Server) popGet(c *gin.Context) (int, any, error) {
	req := popRequest{Topics: c.QueryArray("topic")}
	if len(req.Topics) == 0 {
		return 0, nil, errors.Join(errBadRequest, errors.New("give at least one ?topic="))
	}
	var err error
	if req.Timeout, err = queryTimeout(c, "timeout"); err != nil {
		return 0, nil, err
	}
	if n := c.Query("count"); n != "" {
		count, err := strconv.Atoi(n)
		if err != nil || count < 1 {
			return 0, nil, errors.Join(errBadRequest, errors.New("count must be a whole number of at least 1, got "+strconv.Quote(n)))
		}
		req.Count = count
	}
	return s.pop(c, req)
}

// pop answers 200 with the job (with a count: {"jobs": [...]}), or 204 when
// none came within the timeout.
func (s *Server) pop(c *gin.Context, req popRequest) (int, any, error) {
	if err := s.checkCount(req.Count); err != nil {
		return 0, nil, err
	}
	ctx, cancel := s.waiting(c, req.Timeout)
	defer cancel()
	jobs, err := s.d.Pop(ctx, req)
	return popped(jobs, req.Count > 0, nil, err)
}

// popped is the answer to a pop of one job (many: false) or a batch pop,
// with out's fields added to a batch's answer and to a failure's.
func popped(jobs []*job.Job, many bool, out gin.H, err error) (int, any, error) {
	switch {
	case err != nil:
		return 0, out, err
	case len(jobs) == 0 && out == nil:
		return http.StatusNoContent, nil, nil
	case !many:
		return http.StatusOK, viewPopped(jobs[0]), nil
	}
	if out == nil {
		out = gin.H{}
	}
	views := make([]jobView, len(jobs))
	for i, j := range jobs {
		views[i] = viewPopped(j)
	}
	out["jobs"] = views
	return http.StatusOK, out, nil
}

// waiting is the context of a request that may wait up to timeout for a
// job: its deadline is the wait plus the request timeout.
func (s *Server) waiting(c *gin.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.Request.Context(), timeout+s.opts.RequestTimeout)
}

func (s *Server) checkCount(n int) error {
	if n > s.opts.MaxBatch {
		return fmt.Errorf("%w: count %d is over the limit of %d jobs a request ([jobs] max_batch)", errBadRequest, n, s.opts.MaxBatch)
	}
	return nil
}

// answerJob answers with the job as an operation left it.
func answerJob(j *job.Job, err error) (int, any, error) {
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, viewJob(j), nil
}

func (s *Server) getJob(c *gin.Context) (int, any, error) {
	return answerJob(s.d.Inspect(c, c.Param("id")))
}

func (s *Server) deleteJob(c *gin.Context) (int, any, error) {
	if _, err := s.d.Settle(c, dispatcher.SettleParams{Ack: dispatcher.Ack{ID: c.Param("id")}, Action: dispatcher.ActionDelete}); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, gin.H{"deleted": c.Param("id")}, nil
}

func (s *Server) kickJob(c *gin.Context) (int, any, error) {
	return answerJob(s.d.Settle(c, dispatcher.SettleParams{Ack: dispatcher.Ack{ID: c.Param("id")}, Action: dispatcher.ActionKick}))
}
