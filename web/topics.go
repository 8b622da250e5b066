package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/internal/jobjson"
	"github.com/gmq/gmq/job"
)

// maxTopicsPage is the most topics one GET /api/v1/topics answers (and its
// default): each costs a read of its stats.
const maxTopicsPage = 1000

func (s *Server) topics(c *gin.Context) (int, any, error) {
	p, err := parsePage(c.Query("offset"), c.Query("limit"), maxTopicsPage, maxTopicsPage)
	if err != nil {
		return 0, nil, err
	}
	list, total, err := s.d.Topics(c, p.offset, p.limit)
	if err != nil {
		return 0, nil, err
	}
	views := make([]gin.H, len(list))
	for i, t := range list {
		views[i] = s.withDelivery(topicView(t), t.Name)
	}
	return http.StatusOK, gin.H{"total": total, "offset": p.offset, "topics": views}, nil
}

func (s *Server) topic(c *gin.Context) (int, any, error) {
	t, err := s.d.Topic(c.Param("topic")).Stats(c)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, s.withDelivery(topicView(t), t.Name), nil
}

// withDelivery adds this broker's HTTP deliveries of the topic to its view
// as "delivery", when it has made any.
func (s *Server) withDelivery(v gin.H, topic string) gin.H {
	if s.opts.Deliveries == nil {
		return v
	}
	if st, ok := s.opts.Deliveries(topic); ok {
		v["delivery"] = webhookView(st)
	}
	return v
}

// fields reads a small JSON object body (an empty body is an empty object).
func (s *Server) fields(c *gin.Context) (jobjson.Fields, error) {
	data, err := s.body(c, 64<<10)
	if err != nil || len(data) == 0 {
		return jobjson.Fields{}, err
	}
	return jobjson.Decode(data)
}

// onlyFields is fields refusing any field but names, naming it (400).
func (s *Server) onlyFields(c *gin.Context, what string, names ...string) (jobjson.Fields, error) {
	f, err := s.fields(c)
	if err == nil {
		err = f.Only(what, names...)
	}
	return f, err
}

func (s *Server) kickTopic(c *gin.Context) (int, any, error) {
	f, err := s.onlyFields(c, "a kick", "bound")
	if err != nil {
		return 0, nil, err
	}
	bound := int64(math.MaxInt32)
	if b, ok, err := f.Whole("bound", 0, math.MaxInt32); err != nil {
		return 0, nil, err
	} else if ok {
		bound = b
	}
	n, err := s.d.Topic(c.Param("topic")).Kick(c, int(bound))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, gin.H{"kicked": n}, nil
}

func (s *Server) pause(c *gin.Context) (int, any, error) {
	f, err := s.onlyFields(c, "a pause", "seconds")
	if err != nil {
		return 0, nil, err
	}
	d, ok, err := f.Seconds("seconds")
	if err == nil && !ok {
		err = errors.Join(errBadRequest, errors.New("seconds is missing (0 resumes the topic)"))
	}
	if err != nil {
		return 0, nil, err
	}
	if _, err := s.d.Topic(c.Param("topic")).Pause(c, dispatcher.PauseParams{For: d}); err != nil {
		return 0, nil, err
	}
	return s.topic(c)
}

// flushTopic removes every job of the topic, in any state (kestrel's flush).
func (s *Server) flushTopic(c *gin.Context) (int, any, error) {
	n, err := s.d.Topic(c.Param("topic")).Flush(c)
	if err != nil {
		return 0, gin.H{"flushed": n}, err
	}
	return http.StatusOK, gin.H{"flushed": n}, nil
}

// deleteTopic removes every job of the topic and the topic itself (kestrel's delete).
func (s *Server) deleteTopic(c *gin.Context) (int, any, error) {
	n, err := s.d.Topic(c.Param("topic")).Delete(c)
	if err != nil {
		return 0, gin.H{"deleted_jobs": n}, err
	}
	return http.StatusOK, gin.H{"deleted_jobs": n}, nil
}

// topicConfig answers a topic's settings: "settings" (effective, those
// some layer sets), and the layers they come from: "defaults" ([topics]),
// "file" ([topic.NAME]) and "run" (changed at run time); then "effective",
// every setting's value, gmq's own default where no layer sets it, and
// "from", which layer each comes from ("built_in" for gmq's default), so
// that a retry policy no layer sets shows too (issue 49).
func (s *Server) topicConfig(c *gin.Context) (int, any, error) {
	l, err := s.d.Topic(c.Param("topic")).Config(c)
	if err != nil {
		return 0, nil, err
	}
	effective := settingsView(l.All())
	effective["max_item_size"] = s.itemSizeCap(effective["max_item_size"])
	return http.StatusOK, gin.H{"topic": c.Param("topic"), "settings": settingsView(l.Effective),
		"defaults": settingsView(l.Defaults), "patterns": settingsView(l.Patterns), "file": settingsView(l.File), "run": settingsView(l.Run),
		"effective": effective, "from": l.Sources()}, nil
}

// itemSizeCap is the largest body a push to the topic may carry: its
// max_item_size where that is below [jobs] max_body, else max_body, which
// every push meets first. The effective view shows this rather than the
// setting's 0 ("no cap of its own"), which read as no cap at all.
func (s *Server) itemSizeCap(setting any) int64 {
	if n, ok := setting.(int64); ok && n > 0 && n < int64(s.opts.MaxBody) {
		return n
	}
	return int64(s.opts.MaxBody)
}

// setTopicConfig changes settings at run time, for every broker at once:
// {"max_items": 1000, "discard_old_when_full": true}; null puts a setting
// back to conf.ini's value.
func (s *Server) setTopicConfig(c *gin.Context) (int, any, error) {
	f, err := s.fields(c)
	if err != nil {
		return 0, nil, err
	}
	changes := job.TopicConfig{}
	for k, raw := range f {
		v, err := settingText(raw)
		if err != nil {
			return 0, nil, fmt.Errorf("%w: %s: %w", errBadRequest, k, err)
		}
		changes[k] = v
	}
	if len(changes) == 0 {
		return 0, nil, errors.Join(errBadRequest, fmt.Errorf("no setting given (gmq knows %v)", job.TopicSettingNames()))
	}
	for _, k := range job.TopicOnly {
		// null (conf.ini's value back) is anyone's: it only undoes a change.
		if v, ok := changes[k]; ok && v != "" && s.opts.Token == "" {
			// Without a token anyone who reaches the API could point the
			// brokers' requests anywhere allow_hosts lets them go.
			return http.StatusForbidden, gin.H{"error": k + " is changed at run time only by the holder of [web] token, and this gmq has none: set it in conf.ini's [topic." + c.Param("topic") + "] (then reload), or set a token; null puts back conf.ini's"}, nil
		}
	}
	if err := s.d.Topic(c.Param("topic")).SetConfig(c, changes); err != nil {
		return 0, nil, err
	}
	return s.topicConfig(c)
}

func (s *Server) peekTopic(c *gin.Context) (int, any, error) {
	states := map[string]job.State{"ready": job.Ready, "delayed": job.Delayed, "buried": job.Buried}
	st, ok := states[c.Param("state")]
	if !ok {
		return 0, nil, errors.Join(errBadRequest, errors.New("peek ready, delayed or buried"))
	}
	j, err := s.d.Topic(c.Param("topic")).Peek(c, st)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, viewJob(j), nil
}

func (s *Server) stats(c *gin.Context) (int, any, error) {
	st, err := s.d.Stats(c)
	if err != nil {
		return 0, nil, err
	}
	lost, lostAt := s.d.StoreLosses()
	out := gin.H{
		"version": s.opts.Version, "status": s.d.Status().Announced().String(), "uptime": seconds(st.Uptime), "buckets": st.Buckets, "topics": st.Topics,
		"pid":                os.Getpid(), // this broker's process, for a signal (kill -HUP: reload), as beanstalkd's stats say
		"current_waiting":    st.Waiting,
		"current_end_waits":  st.EndWaits,
		"current_jobs_ready": st.Ready, "current_jobs_delayed": st.Delayed,
		"current_jobs_reserved": st.Reserved, "current_jobs_buried": st.Buried,
		"total_jobs": st.Jobs, "total_reserves": st.Reserves, "total_deletes": st.Deletes,
		"total_timeouts": st.Timeouts, "total_releases": st.Releases, "total_buries": st.Buries,
		"total_kicks": st.Kicks, "total_touches": st.Touches, "total_flushed": st.Flushed, "total_discarded": st.Discarded, "total_expired": st.Expired,
		"current_jobs_dead": st.Dead, "total_failures": st.Failures, "total_dead": st.DeadTotal,
		"current_jobs_completed": st.Completed, "total_completed": st.CompletedTotal,
		"current_jobs_cancelled": st.Cancelled, "total_cancelled": st.CancelledTotal,
		"current_followups": st.FollowUps, // kept, not yet pushed (docs/workflows.md)
		"queue_creates":     st.QueueCreates, "queue_deletes": st.QueueDeletes, "queue_expires": st.QueueExpires,
		"connections": s.connections(),
		// This broker's pushes, pops and acks and the script calls that carried them.
		"batched_operations": st.Batched.Ops, "batch_script_calls": st.Batched.Calls,
		"aliases_left": st.LeftAliases, "expired_refused": st.RefusedExpired,
	}
	// The store's format, and whether its migration to it is over
	// (pool/format.go): how many bodies this broker moved.
	out["store_format"], out["store_migrated"], out["store_bodies_migrated"] = s.d.Migration()
	// How often this broker saw Redis lose gmq's data, and when last.
	out["store_data_lost"], out["store_data_lost_at"] = lost, nil
	if lost > 0 {
		out["store_data_lost_at"] = lostAt.UTC().Format(time.RFC3339Nano)
	}
	return http.StatusOK, out, nil
}

func (s *Server) connections() map[string]int {
	out := make(map[string]int, len(s.opts.Others))
	for name, fe := range s.opts.Others {
		out[name] = fe.Connections()
	}
	return out
}

// status answers the status this broker announces, the one it obeys now
// and the layers they come from (dispatcher.StatusView):
// {"status": "readonly", "enforced": "up", "enforced_at": "...", "version": "0.1.0",
// "broker": "host-1-ab", "fleet": {...}, "own": {...}, "signals": {...},
// "brokers": [{"name": ..., "status": ..., "enforced": ...}]}.
func (s *Server) status(c *gin.Context) (int, any, error) {
	v := s.d.Status().View()
	out := gin.H{"status": v.Announced.String(), "enforced": v.Enforced.String(), "version": s.opts.Version,
		"broker": v.Broker, "fleet": layerView(v.Fleet), "own": layerView(v.Own), "signals": layerView(v.Signals)}
	if !v.At.IsZero() {
		out["enforced_at"] = v.At.UTC().Format(statusTime)
	}
	names := make([]string, 0, len(v.Brokers))
	for name := range v.Brokers {
		names = append(names, name)
	}
	slices.Sort(names)
	brokers := make([]gin.H, 0, len(names))
	for _, name := range names {
		l := layerView(v.Brokers[name])
		l["name"] = name
		brokers = append(brokers, l)
	}
	out["brokers"] = brokers
	return http.StatusOK, out, nil
}

// layerView shows a status layer: the status it announces, the one it
// enforces now, and when a pending one is enforced.
func layerView(l job.StatusLayer) gin.H {
	now := time.Now()
	out := gin.H{"status": l.Announced().String(), "enforced": l.Enforced(now).String()}
	if l.Pending(now) {
		out["enforced_at"] = l.At.UTC().Format(statusTime)
	}
	return out
}

// setStatus sets the status of every broker sharing the Redis, or with
// "broker" (a name GET lists, or "this") one broker's own:
// {"status": "up" | "writeavoid" | "readonly" | "quiescent", "broker": "..."}.
func (s *Server) setStatus(c *gin.Context) (int, any, error) {
	f, err := s.onlyFields(c, "a status", "status", "broker")
	if err != nil {
		return 0, nil, err
	}
	name, ok, err := f.Str("status")
	if err == nil && !ok {
		err = errors.Join(errBadRequest, errors.New("status is missing: up, writeavoid, readonly or quiescent"))
	}
	if err != nil {
		return 0, nil, err
	}
	broker, _, err := f.Str("broker")
	if err != nil {
		return 0, nil, err
	}
	st, err := job.ParseStatus(name)
	if err != nil {
		return 0, nil, err
	}
	if err := s.d.Status().SetBroker(c, broker, st); err != nil {
		return 0, nil, err
	}
	return s.status(c)
}

func (s *Server) healthz(c *gin.Context) (int, any, error) {
	return http.StatusOK, gin.H{"status": "ok"}, nil
}

// readyz says whether this broker should be sent new work: 503 while it
// shuts down, while it announces Quiescent (a grace period's included, so
// that load balancers leave before it refuses), and while Redis is out of
// reach. /healthz says only that the process lives.
func (s *Server) readyz(c *gin.Context) (int, any, error) {
	unready := func(why string) (int, any, error) {
		return http.StatusServiceUnavailable, gin.H{"status": "unavailable", "error": why}, nil
	}
	if s.d.Status().IsStopping() {
		return unready("the broker is shutting down")
	}
	if st := s.d.Status().Announced(); st == job.Quiescent {
		return unready("the server status is quiescent: it takes no new work")
	}
	if err := s.d.Store().Ping(c); err != nil {
		return unready(err.Error())
	}
	return http.StatusOK, gin.H{"status": "ready"}, nil
}

// settingText reads a setting's JSON value as the text job.CheckTopicSetting
// checks: a number, a boolean or a string as written, null as "" (back to
// conf.ini's value).
func settingText(raw json.RawMessage) (string, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", err
	}
	switch v := v.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case bool:
		return strconv.FormatBool(v), nil
	case float64:
		return string(raw), nil // as written: 1e3 or 1.5 are refused by the setting's rule
	}
	return "", fmt.Errorf("want a number, true or false, or null, got %s", jobjson.Clip(raw))
}

// maxHistoryTopics is the most topics one GET /api/v1/history asks for
// (the dashboard's page of topics): each is a read of its list.
const maxHistoryTopics = 100

// history answers the server's sampled counters, oldest first: the last
// hour, a sample every few seconds, shared by every broker on the Redis
// (the dashboard's chart starts from it). With ?topic=T (up to
// maxHistoryTopics), "topics" adds each one's own last 5 minutes, kept for
// the first page of topics only (dispatcher.sampleTopics): the dashboard's
// topic sparklines start from it.
func (s *Server) history(c *gin.Context) (int, any, error) {
	topics := c.QueryArray("topic")
	if len(topics) > maxHistoryTopics {
		return 0, nil, fmt.Errorf("%w: %d topic parameters, at most %d", errBadRequest, len(topics), maxHistoryTopics)
	}
	out := gin.H{}
	if len(topics) > 0 {
		perTopic, err := s.d.TopicHistory(c, topics)
		if err != nil {
			return 0, nil, err
		}
		views := make(gin.H, len(perTopic))
		for t, list := range perTopic {
			v := make([]gin.H, len(list))
			for i, smp := range list {
				v[i] = sampleView(smp.At, smp.Values)
			}
			views[t] = v
		}
		out["topics"] = views
	}
	samples, err := s.d.Store().History(c)
	if err != nil {
		return 0, nil, err
	}
	v := make([]gin.H, len(samples))
	for i, smp := range samples {
		v[i] = sampleView(smp.At, smp.Values)
	}
	out["samples"] = v
	return http.StatusOK, out, nil
}

// sampleView is a sample as the API shows it: {"t": ms, field: value...}.
func sampleView(at time.Time, values map[string]int64) gin.H {
	m := gin.H{"t": at.UnixMilli()}
	for k, v := range values {
		m[k] = v
	}
	return m
}

// statusTime is how a status's enforced_at is shown: to the millisecond,
// as Redis's clock that times it.
const statusTime = "2006-01-02T15:04:05.000Z07:00"
