package pool

// The contract with the Lua scripts (package lua): what a script's reply
// starts with, and the kinds and modes of batch.lua's operations. The
// scripts spell the same words; a reply the pool does not know is an error
// that names it.

// Reply statuses, the first element of a script's reply.
const (
	replyOK       = "OK"        // done; the rest of the reply is the outcome
	replyTopic    = "TOPIC"     // the job is another topic's (named next): nothing changed, ask again with it
	replyNotFound = "NOT_FOUND" // no such job
	replyStale    = "STALE"     // the call names an older delivery (the current one next)
	replyState    = "STATE"     // the job's state (next) does not allow the operation
	replyEmpty    = "EMPTY"     // a pop found no ready job (the wait for a paused topic next)
	replyDropped  = "DROPPED"   // after a batch's replies: the expired jobs whose client ids to drop
	replyJobs     = "JOBS"      // a pop_n's jobs: whether more are ready, their count, then the jobs
	replyPeek     = "PEEK"      // a peek-mode pop's best job: its topic, priority and member
	replyFull     = "FULL"      // a push refused: the topic holds max_items (next) jobs
	replyTooBig   = "TOO_BIG"   // a push refused: the body is over the topic's max_item_size (next)
	replyChildren = "CHILDREN"  // a push refused: its fanout children are not those given (the real ones next)
)

// Operation kinds in a batch (batch.lua runs each kind in its phase).
const (
	opPush   = "push"
	opDelete = "delete" // an ack or a delete
	opPop    = "pop"
	opPopN   = "pop_n"
	opAckPop = "ack_pop" // an ack, then a pop in the same bucket
)

// Pop modes: which ready job a pop takes from its topics.
const (
	popFirst = "first" // the first listed topic's best job (gmq's pop)
	popBest  = "best"  // the best job among all the topics (beanstalkd's reserve)
	popPeek  = "peek"  // nothing: name the best job, so the caller can pick a bucket
	popTake  = "take"  // popFirst's job, removed as it is popped whatever its TTR
)

// Delete modes.
const (
	deleteAny        = ""           // any state (an ack when fenced by an attempt)
	deleteUnreserved = "unreserved" // spare a reserved job (beanstalkd's delete from another connection)
)
