package jobjson

import (
	"encoding/json"
	"fmt"

	"github.com/gmq/gmq/job"
)

// BatchFields are the fields a batch to create may have.
var BatchFields = []string{"jobs", "on_complete", "on_success", "on_death", "meta", "open", "with_results"}

// Batch reads a batch to create (POST /api/v1/batches): its jobs, 0 to
// job.MaxBatchJobs, each as Job reads one; its callbacks, each one job;
// meta, any JSON value; open and with_results, true or false.
func Batch(f Fields, def Defaults) (job.BatchSpec, error) {
	var s job.BatchSpec
	if err := f.Only("a batch", BatchFields...); err != nil {
		return s, err
	}
	var err error
	if s.Jobs, err = f.Jobs("jobs", def, job.MaxBatchJobs); err != nil {
		return s, err
	}
	for name, to := range map[string]**job.Spec{"on_complete": &s.OnComplete, "on_success": &s.OnSuccess, "on_death": &s.OnDeath} {
		raw, ok := f[name]
		if !ok || string(raw) == "null" {
			continue
		}
		jf, err := Decode(raw)
		var c job.Spec
		if err == nil {
			c, err = Job(jf, def)
		}
		if err != nil {
			return s, fmt.Errorf("%s: %w", name, err)
		}
		*to = &c
	}
	if s.Meta, err = f.JSONValue("meta"); err != nil {
		return s, err
	}
	// Meta goes into every summary, which clients decode: Decode's Check
	// has refused what one of them could not read back (1e400 as a body's).
	for name, to := range map[string]*bool{"open": &s.Open, "with_results": &s.WithResults} {
		if raw, ok := f[name]; ok && string(raw) != "null" {
			if err := json.Unmarshal(raw, to); err != nil {
				return s, fmt.Errorf("%w: %s must be true or false", ErrBadRequest, name)
			}
		}
	}
	return s, nil
}

// Jobs reads a list of jobs under name, 0 to limit, each as Job reads one
// (nil when absent or null).
func (f Fields) Jobs(name string, def Defaults, limit int) ([]job.Spec, error) {
	return f.jobList(name, def, 0, limit)
}
