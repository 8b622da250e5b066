package dispatcher

// Topic is one topic's administration: its settings, pause, stats, the
// jobs it holds by state, and flushing, retrying, purging or deleting
// them. One of the dispatcher's concerns apart from its core (push, pop,
// settle, the waiters and the buckets), reached by the topic's name
// (Dispatcher.Topic); the name is checked by each call.
type Topic struct {
	d    *Dispatcher
	name string
}

// Topic is topic name's administration.
func (d *Dispatcher) Topic(name string) Topic { return Topic{d: d, name: name} }
