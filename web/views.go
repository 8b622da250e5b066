package web

import (
	"time"

	"github.com/gin-gonic/gin"
	"github.com/gmq/gmq/pool"
)

// jobView is a job as the API shows it. Durations are in seconds; "TTR" and
// "consumeNum" keep gmq's names.
func jobView(j *pool.Job) gin.H {
	v := gin.H{
		"id": j.PublicID(), "internal_id": j.ID, "topic": j.Topic, "body": j.Body,
		"state": j.State.String(), "priority": j.Priority,
		"delay": seconds(j.Delay), "TTR": seconds(j.TTR),
		"attempt": j.Attempt(), "reserves": j.Reserves, "consumeNum": j.Reserves,
		"timeouts": j.Timeouts, "releases": j.Releases, "buries": j.Buries, "kicks": j.Kicks,
		"created": j.Created.UTC().Format(time.RFC3339Nano), "age": seconds(j.Age()),
		"time_left": seconds(j.TimeLeft()),
	}
	if !j.Due.IsZero() {
		v["due"] = j.Due.UTC().Format(time.RFC3339Nano)
	}
	return v
}

func topicView(t pool.TopicStats) gin.H {
	return gin.H{
		"name": t.Name, "ready": t.Ready, "urgent": t.Urgent, "delayed": t.Delayed, "reserved": t.Reserved,
		"buried": t.Buried, "paused": t.Paused(), "pause": seconds(t.Pause), "pause_time_left": seconds(t.PauseLeft()),
		"total_jobs": t.Jobs, "total_reserves": t.Reserves, "total_deletes": t.Deletes, "total_pauses": t.Pauses,
	}
}

// seconds renders a duration as seconds with millisecond precision.
func seconds(d time.Duration) float64 { return float64(d.Milliseconds()) / 1000 }
