package thrift

import "github.com/gmq/gmq/job"

// An open read's id, as get hands it out and confirm and abort name it,
// packs the job's number and the delivery it was: number<<attemptBits |
// attempt. Numbers stay below 2^53 (docs/ARCHITECTURE.md, Ids), so the id
// is a positive i64, and a job's number, unlike a client id, never names
// another job. The attempt is kept modulo 2^attemptBits: an id is looked
// up whole among the server's open reads, which hold the whole attempt,
// and only an id no read holds (one opened by another broker, or before a
// restart) is settled by the attempt it carries, which then fences it: a
// delivery that came since is another attempt, and the store refuses it as
// stale (a job delivered 1,024 times over fails closed: it is refused too).
const (
	attemptBits = 10
	attemptMask = 1<<attemptBits - 1
	maxNumber   = 1 << (63 - attemptBits) // 2^53: the first number an id cannot carry
)

// packID is the id of j's current delivery; false when its number cannot
// be packed (no number gmq hands out is that large).
func packID(j *job.Job) (int64, bool) {
	if j.ID == 0 || j.ID >= maxNumber {
		return 0, false
	}
	return int64(j.ID)<<attemptBits | int64(j.Attempt()&attemptMask), true
}

// unpackID is the number and attempt an id carries; false for an id no
// get hands out (0: a read removed as it was read, negative, attempt 0).
func unpackID(id int64) (number uint64, attempt int, ok bool) {
	if id <= 0 || id&attemptMask == 0 {
		return 0, 0, false
	}
	return uint64(id >> attemptBits), int(id & attemptMask), true
}
