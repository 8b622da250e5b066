package web

import (
	"bytes"
	"errors"

	"github.com/gin-gonic/gin"

	"github.com/gmq/gmq/internal/jobjson"
	"github.com/gmq/gmq/job"
)

// updateJob changes a ready or delayed job's delay, priority or body
// (PATCH /api/v1/jobs/:id) and answers with the job as it now is; a job in
// another state is 409, as its consumer or its failure holds it.
func (s *Server) updateJob(c *gin.Context) (int, any, error) {
	data, err := s.body(c, s.pushLimit())
	if err != nil {
		return 0, nil, err
	}
	u, err := parseUpdate(data)
	if err != nil {
		return 0, nil, err
	}
	return answerJob(s.d.UpdateJob(c, c.Param("id"), u))
}

// parseUpdate reads a PATCH's JSON object: the fields it names change, the
// others stay.
func parseUpdate(data []byte) (job.Update, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return job.Update{}, errors.Join(errBadRequest, errors.New("give a JSON object of the changes: delay, priority, body"))
	}
	f, err := jobjson.Decode(data)
	if err != nil {
		return job.Update{}, err
	}
	return f.Update("a job's update")
}
