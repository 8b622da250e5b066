package web

import (
	"path"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gmq/gmq/job"
)

// clientMessage is what the client is told of err, in its own terms. A
// request on one job (/api/v1/jobs/:id/...) that met an expected outcome is
// answered with the client's verb and id, e.g. `ack "order-42": stale
// delivery: attempt 1, the job is on attempt 2`, not with the store's
// (`delete job 40: ...`: an ack is a delete there, and a client id its
// number). Other requests are told publicMessage, but a not-found keeps its
// own words there ("topic \"t\": not found").
func clientMessage(c *gin.Context, err error) string {
	if id := c.Param("id"); id != "" && strings.HasPrefix(c.FullPath(), "/api/v1/jobs/:id") {
		if msg, ok := job.Outcome(err); ok {
			return jobVerb(c) + " " + strconv.Quote(id) + ": " + msg
		}
	}
	if job.KindOf(err) == job.KindNotFound {
		return oneLine(err.Error())
	}
	return publicMessage(err)
}

// jobVerb is the client's name for a request on one job: the action at the
// end of its path (ack, release, bury, touch, kick, fail), delete for
// DELETE, update for PATCH, and "job" for a lookup.
func jobVerb(c *gin.Context) string {
	switch {
	case c.Request.Method == "DELETE":
		return "delete"
	case c.Request.Method == "PATCH":
		return "update"
	case strings.HasSuffix(c.FullPath(), "/:id"):
		return "job"
	}
	return path.Base(c.FullPath())
}

// oneLine is an error's message on one line: errors.Join puts a newline
// between the messages it joins, which a client would show as it is.
func oneLine(msg string) string { return strings.ReplaceAll(msg, "\n", ": ") }
