package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gmq/gmq/internal/jobjson"
	"github.com/gmq/gmq/job"
)

// schedules lists every schedule with its next and last fire.
func (s *Server) schedules(c *gin.Context) (int, any, error) {
	all, err := s.d.Schedules().List(c)
	if err != nil {
		return 0, nil, err
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	out := make([]gin.H, len(all))
	for i, sc := range all {
		out[i] = scheduleView(sc)
	}
	return http.StatusOK, gin.H{"schedules": out}, nil
}

func (s *Server) schedule(c *gin.Context) (int, any, error) {
	sc, err := s.d.Schedules().Get(c, c.Param("name"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, scheduleView(sc), nil
}

// setSchedule makes or changes a schedule: {"cron", "tz", "job", "overlap",
// "paused"}, each over the schedule's run-time layer (null: back to
// conf.ini's).
func (s *Server) setSchedule(c *gin.Context) (int, any, error) {
	data, err := s.body(c, s.pushLimit()) // its job's body may be as large as a push's
	if err != nil {
		return 0, nil, err
	}
	f := jobjson.Fields{}
	if len(data) > 0 {
		if f, err = jobjson.Decode(data); err != nil {
			return 0, nil, err
		}
	}
	if err := f.Only("a schedule", jobjson.ScheduleFields...); err != nil {
		return 0, nil, err
	}
	if len(f) == 0 {
		return 0, nil, fmt.Errorf("%w: no field given (a schedule has cron, tz, job, overlap, paused)", errBadRequest)
	}
	sc, err := s.d.Schedules().Set(c, c.Param("name"), f)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, scheduleView(sc), nil
}

// releaseUnique frees a topic's unique key before its window ends.
func (s *Server) releaseUnique(c *gin.Context) (int, any, error) {
	if err := s.d.ReleaseUnique(c, c.Param("topic"), c.Param("key")); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, gin.H{"released": c.Param("key")}, nil
}

// fireSchedule pushes a schedule's job now ("fire now"), outside its cron.
func (s *Server) fireSchedule(c *gin.Context) (int, any, error) {
	if _, err := s.onlyFields(c, "a fire"); err != nil { // it takes no field: a body would be silently lost
		return 0, nil, err
	}
	got, err := s.d.Schedules().Fire(c, c.Param("name"))
	if err != nil {
		return 0, nil, err
	}
	out := gin.H{"id": job.PublicID(got.ClientID, got.ID), "internal_id": got.ID}
	if got.Unique != "" { // its job's unique key changed a waiting job: no new job
		out["unique"] = got.Unique
		return http.StatusOK, out, nil
	}
	return http.StatusCreated, out, nil
}

func (s *Server) deleteSchedule(c *gin.Context) (int, any, error) {
	if err := s.d.Schedules().Delete(c, c.Param("name")); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, gin.H{"deleted": c.Param("name")}, nil
}

// scheduleView shows a schedule: its definition, its layers, and its fires.
func scheduleView(sc job.Schedule) gin.H {
	j := sc.Spec.Job
	jobView := gin.H{"topic": j.Topic, "body": job.BodyValue(j.Body, j.BodyJSON), "priority": j.Priority, "TTR": seconds(j.TTR), "delay": seconds(j.Delay)}
	if j.Group != "" {
		jobView["group"] = j.Group
	}
	overlap := sc.Spec.Overlap
	if overlap == "" {
		overlap = job.OverlapAllow
	}
	v := gin.H{"name": sc.Name, "cron": sc.Spec.Cron, "tz": sc.Spec.TZ, "job": jobView, "overlap": overlap,
		"paused": sc.Spec.Paused, "fires": sc.Fires, "skips": sc.Skips, "refused": sc.Refused,
		"lateness_seconds": seconds(sc.Late), "file": rawLayer(sc.File), "run": rawLayer(sc.Run)}
	if sc.Spec.TZ == "" {
		v["tz"] = "UTC"
	}
	at := func(k string, t time.Time) {
		if !t.IsZero() {
			v[k] = t.UTC().Format(time.RFC3339Nano)
		}
	}
	at("next", sc.Next)
	at("last", sc.Last)
	if sc.LastID != 0 {
		v["last_id"] = job.PublicID("", sc.LastID)
	}
	return v
}

// rawLayer shows a stored layer as JSON ({} when none).
func rawLayer(text string) json.RawMessage {
	if text == "" || !json.Valid([]byte(text)) {
		return json.RawMessage("{}")
	}
	return json.RawMessage(text)
}
