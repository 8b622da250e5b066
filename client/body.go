package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// jobFields is Job without its methods, so that MarshalJSON and
// UnmarshalJSON can read and write its other fields as encoding/json does.
type jobFields Job

// MarshalJSON writes j as gmq's push reads it: its body as a JSON string
// (Body), or as JSON (JSON when it is set, else Body when BodyJSON is),
// and its follow-ups (Then, OnDead) as jobs.
func (j Job) MarshalJSON() ([]byte, error) {
	body, err := j.body()
	if err != nil {
		return nil, err
	}
	// The fields in Job's order: id and topic over jobFields' own, then body.
	return json.Marshal(struct {
		ID    string          `json:"id,omitempty"`
		Topic string          `json:"topic"`
		Body  json.RawMessage `json:"body"`
		jobFields
		Then   []Job `json:"then,omitempty"`
		OnDead []Job `json:"on_dead,omitempty"`
	}{j.ID, j.Topic, body, jobFields(j), j.Then, j.OnDead})
}

// body is j's body as JSON, as MarshalJSON sends it.
func (j Job) body() (json.RawMessage, error) {
	switch {
	case j.JSON != nil:
		data, err := json.Marshal(j.JSON)
		if err != nil {
			return nil, fmt.Errorf("gmq: the job's JSON body: %w", err)
		}
		return data, nil
	case j.BodyJSON:
		if !json.Valid([]byte(j.Body)) {
			return nil, fmt.Errorf("gmq: the job's BodyJSON is set, but its Body is not JSON: %.40q", j.Body)
		}
		return json.RawMessage(j.Body), nil
	}
	return json.Marshal(j.Body)
}

// FailureError is one failure's error, as a job read back keeps it
// (Job.Errors): the attempt that failed, when, and the reason its consumer
// gave ("(no reason given)" for none), cut to 1 KiB.
type FailureError struct {
	Attempt int       `json:"attempt"`
	At      time.Time `json:"at"`
	Error   string    `json:"error"`
}

// UnmarshalJSON reads a job as gmq shows it (its follow-ups as their ids:
// ThenIDs, OnDeadIDs). A body that is a JSON object
// or array (pushed as one) is kept in Body as its compact text, with
// BodyJSON set; a string body is Body, BodyJSON false.
func (j *Job) UnmarshalJSON(data []byte) error {
	var in struct {
		*jobFields
		Body              json.RawMessage            `json:"body"`
		Then              []string                   `json:"then"`
		OnDead            []string                   `json:"on_dead"`
		WaitingFor        []string                   `json:"waiting_for"`
		DependencyResults map[string]json.RawMessage `json:"dependency_results"`
		MaxAttempts       *int                       `json:"max_attempts"`
		NextAttemptAt     *time.Time                 `json:"next_attempt_at"`
		Errors            []FailureError             `json:"errors"`
	}
	in.jobFields = (*jobFields)(j)
	if err := json.Unmarshal(data, &in); err != nil {
		return err
	}
	j.ThenIDs, j.OnDeadIDs, j.WaitingFor, j.DependencyResults = in.Then, in.OnDead, in.WaitingFor, in.DependencyResults
	j.MaxAttempts, j.NextAttemptAt, j.Errors = in.MaxAttempts, in.NextAttemptAt, in.Errors
	body := bytes.TrimSpace(in.Body)
	switch {
	case len(body) == 0 || string(body) == "null": // no body: left as it is
	case body[0] == '"':
		j.BodyJSON = false
		return json.Unmarshal(body, &j.Body)
	default:
		var b bytes.Buffer
		if err := json.Compact(&b, body); err != nil {
			return err
		}
		j.Body, j.BodyJSON = b.String(), true
	}
	return nil
}
