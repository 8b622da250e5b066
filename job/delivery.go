package job

import "strconv"

// Delivery names one delivery of a job: the job's number and the attempt
// the delivery was. A pop hands it to the consumer as a token, which the
// consumer sends back with its ack, touch, release, bury or fail, so that
// the call reaches that delivery of that job and no other: numbers never
// repeat, even after Redis loses its data, while a client id may be pushed
// again (docs/operations.md, "When Redis loses its data"). The zero
// Delivery is none: no job is numbered 0 and attempts start at 1.
type Delivery struct {
	ID      uint64
	Attempt int
}

// Token is the delivery as clients see it, "<number>.<attempt>": opaque to
// them (they send back what they got), made of fields every pop returns, so
// that it costs Redis nothing. jobjson.Token reads it back.
func (d Delivery) Token() string {
	return strconv.FormatUint(d.ID, 10) + "." + strconv.Itoa(d.Attempt)
}

// IsZero reports whether d names no delivery.
func (d Delivery) IsZero() bool { return d == Delivery{} }

// Delivery is the job's current delivery (a popped job's: the one its pop made).
func (j *Job) Delivery() Delivery { return Delivery{ID: j.ID, Attempt: j.Attempt()} }
