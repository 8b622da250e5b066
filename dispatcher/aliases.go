package dispatcher

// SetAliases replaces the topic aliases (conf.ini's [alias.NAME]: at start
// and at reload). An alias only takes pushes: a push to it is a push to each
// of its destinations (store); a pop from it finds it empty; a flush or
// delete of it is ignored (kestrel's queue aliases). The map is not changed
// after.
func (d *Dispatcher) SetAliases(aliases map[string][]string) {
	if len(aliases) == 0 {
		aliases = nil
	}
	d.aliases.Store(&aliases)
}

// alias returns the destinations of an alias, or ok false for a topic.
func (d *Dispatcher) alias(name string) (dests []string, ok bool) {
	m := d.aliases.Load()
	if m == nil || *m == nil {
		return nil, false
	}
	dests, ok = (*m)[name]
	return dests, ok
}

// withoutAliases drops the aliases from a consumer's topics: a pop finds an
// alias empty.
func (d *Dispatcher) withoutAliases(topics []string) []string {
	if m := d.aliases.Load(); m == nil || *m == nil {
		return topics
	}
	out := topics[:0:0]
	for _, t := range topics {
		if _, ok := d.alias(t); !ok {
			out = append(out, t)
		}
	}
	return out
}
