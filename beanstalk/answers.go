package beanstalk

import "github.com/gmq/gmq/job"

// answerOf is the beanstalkd port's answers table: the reply to each kind
// of error (job.Kind) a command's store call ends in, for any command but
// those answers overrides. beanstalkd's protocol has no word for a stale
// delivery or a state that forbids the command: both are NOT_FOUND, as
// beanstalkd answers a delete of a job another connection reserved.
var answerOf = map[job.Kind]string{
	job.KindNotFound:    msgNotFound,
	job.KindConflict:    msgNotFound,
	job.KindInvalid:     msgBadFormat,
	job.KindTooBig:      msgJobTooBig,
	job.KindFull:        msgOutOfMemory, // the tube is full ([topic] max_items): beanstalkd's word for no room
	job.KindOutOfMemory: msgOutOfMemory,
	job.KindRetryLater:  msgInternalError,
	job.KindDraining:    msgDraining,    // the server status (ReadOnly, Quiescent) refuses it
	job.KindOverloaded:  msgOutOfMemory, // too many reserves wait
	job.KindCancelled:   msgNotFound,    // cancelled while reserved: gone, as beanstalkd's deleted jobs are
	job.KindInternal:    msgInternalError,
}

// answers holds the commands whose answer to a kind is not answerOf's.
var answers = map[string]map[job.Kind]string{
	// A put that meets a job in a state that forbids it (a grouped tube
	// holding too many ungrouped jobs) made nothing: the server's refusal.
	"cmd-put": {job.KindConflict: msgInternalError},
}

// answer is the reply of command stat (its stats name, "cmd-put") to err.
func answer(stat string, err error) string {
	kind := job.KindOf(err)
	if a, ok := answers[stat][kind]; ok {
		return a
	}
	return answerOf[kind]
}

// logged says whether an error of kind is the server's, to log with its
// cause (job.Kind.Client): not a drain, which the operator asked for.
func logged(kind job.Kind) bool { return !kind.Client() && kind != job.KindDraining }
