package pool

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/lua"
	"github.com/redis/rueidis"
)

// Topic settings live where the push script can read them, in the topic's
// hash slot: every bucket holds a copy of the defaults (keys.defaults), and
// each configured topic a hash (keys.config) of "file.<setting>" (its
// conf.ini section) and "run.<setting>" (changed at run time) fields. The
// effective setting is run's, else file's, else the default (lib.lua
// topic_config). So every broker sharing the Redis applies a change at once.
const (
	fileLayer = "file."
	runLayer  = "run."
)

// patternField starts a topic pattern's field in a bucket's defaults
// ("@pattern crawl/*" -> "rate=10 max_reserved=5"): lua/lib.lua PATTERN.
const patternField = "@pattern "

// ApplyTopicConfig writes conf.ini's topic settings: defaults and patterns
// (a name with '*') into every bucket's copy, each named topic's section
// into its file layer; topics named before but not now lose their file
// layer, and patterns no longer named go. Run-time changes stay. Each write
// is one script (settings.lua, topic_patterns.lua), so a push never sees a
// half-written layer. Where a group_* setting changed (the defaults or a
// pattern's: every topic), the groups parked under the old one come back
// (unparkGroupsOf); settings as they were park nothing anew, so a restart
// or a reload that changes nothing keeps every group's hold.
func (p *Pool) ApplyTopicConfig(ctx context.Context, defaults job.TopicConfig, topics map[string]job.TopicConfig) error {
	var patterns []string // glob, its settings as "setting=value" words, ...
	for name, cfg := range topics {
		if job.IsTopicPattern(name) {
			words := make([]string, 0, len(cfg))
			for k, v := range cfg {
				words = append(words, k+"="+v)
			}
			patterns = append(patterns, name, strings.Join(words, " "))
		}
	}
	every := false // a default's or a pattern's group setting changed: every topic's groups come back
	for b := range p.opts.Buckets {
		key := p.keys.buckets[b].defaults
		grouped, err := p.writeSettings(ctx, key, key, "", "", true, defaults)
		if err != nil {
			return wrapRedis("apply topic defaults", err)
		}
		changed, err := topicPatternsScript.Exec(ctx, p.client, []string{key}, append(lua.Args("topic_patterns"), patterns...)).AsInt64()
		if err != nil {
			return wrapRedis("apply topic patterns", err)
		}
		every = every || grouped || changed == 1
	}
	before, err := p.client.Do(ctx, p.client.B().Smembers().Key(p.keys.configured()).Build()).AsStrSlice()
	if err != nil {
		return wrapRedis("apply topic settings", err)
	}
	names := map[string]bool{}
	for _, t := range before {
		names[t] = true
	}
	for t := range topics {
		names[t] = !job.IsTopicPattern(t)
	}
	var unpark []string
	for t, topic := range names {
		if !topic {
			continue // a pattern (written above)
		}
		grouped, err := p.setLayer(ctx, t, fileLayer, topics[t], true)
		if err != nil {
			return err
		}
		if grouped {
			unpark = append(unpark, t)
		}
	}
	if every {
		var err error
		if unpark, err = p.Topics(ctx); err != nil {
			return err
		}
	}
	return p.unparkGroupsOf(ctx, unpark)
}

// unparkGroupsOf lets the parked groups of topics back (UnparkGroups),
// sixteen topics at once (rueidis pipelines their calls): a reload that
// touched [topics] on a store of 100,000 topics made one round trip each.
func (p *Pool) unparkGroupsOf(ctx context.Context, topics []string) error {
	errs := make([]error, len(topics))
	slots := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i, topic := range topics {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			_, errs[i] = p.UnparkGroups(ctx, topic)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// SetTopicConfig changes a topic's run-time settings: each key to its value,
// or, with "", back to what conf.ini says. A group_* setting that changed
// lets the groups parked under the old one back (UnparkGroups).
func (p *Pool) SetTopicConfig(ctx context.Context, topic string, changes job.TopicConfig) error {
	if err := p.reference(ctx, topic); err != nil {
		return err
	}
	grouped, err := p.setLayer(ctx, topic, runLayer, changes, false)
	if err != nil || !grouped {
		return err
	}
	_, err = p.UnparkGroups(ctx, topic)
	return err
}

// setLayer writes a topic's layer: the keys given (an empty value removes
// one), and with replace, removing the layer's other keys. The topic is
// listed as configured first, so a reload finds its hash whatever happens
// after; the bucket's defaults then say a topic there has settings, so the
// push script reads them (lib.lua topic_config).
// It says whether a group_* setting of the layer changed.
func (p *Pool) setLayer(ctx context.Context, topic, layer string, values job.TopicConfig, replace bool) (bool, error) {
	if err := p.client.Do(ctx, p.client.B().Sadd().Key(p.keys.configured()).Member(topic).Build()).Error(); err != nil {
		return false, wrapRedis("topic settings", err)
	}
	defaults := p.keys.buckets[p.keys.bucketOf(topic)].defaults
	grouped, err := p.writeSettings(ctx, p.keys.config(topic), defaults, topic, layer, replace, values)
	return grouped, wrapRedis("topic settings", err)
}

// writeSettings runs settings.lua on hash key (in the slot of the bucket
// whose defaults hash is defaults): topic's config hash ("": the bucket's
// defaults); it says whether a group_* setting changed.
func (p *Pool) writeSettings(ctx context.Context, key, defaults, topic, prefix string, replace bool, values job.TopicConfig) (bool, error) {
	flag := func(b bool) string {
		if b {
			return "1"
		}
		return ""
	}
	args := lua.Args("settings", "prefix", prefix, "replace", flag(replace), "mark", flag(topic != ""), "topic", topic)
	for k, v := range values {
		args = append(args, k, v)
	}
	grouped, err := settingsScript.Exec(ctx, p.client, []string{key, defaults}, args).AsInt64()
	return grouped == 1, err
}

// TopicConfig reads a topic's settings, layer by layer. Reading a fanout
// child's references it (it starts getting its parent's jobs).
func (p *Pool) TopicConfig(ctx context.Context, topic string) (job.TopicLayers, error) {
	if err := p.reference(ctx, topic); err != nil {
		return job.TopicLayers{}, err
	}
	return p.topicLayers(ctx, topic)
}

// TopicSettings reads a topic's effective settings (those some layer
// sets), as TopicConfig does but without referencing a fanout child: for
// a look at one of its jobs, which names the topic it is in.
func (p *Pool) TopicSettings(ctx context.Context, topic string) (job.TopicConfig, error) {
	l, err := p.topicLayers(ctx, topic)
	return l.Effective, err
}

// topicLayers reads a topic's settings, layer by layer: three hashes in
// one round trip.
func (p *Pool) topicLayers(ctx context.Context, topic string) (job.TopicLayers, error) {
	parent := Parent(topic)
	res := p.client.DoMulti(ctx,
		p.client.B().Hgetall().Key(p.keys.buckets[p.keys.bucketOf(topic)].defaults).Build(),
		p.client.B().Hgetall().Key(p.keys.config(topic)).Build(),
		p.client.B().Hgetall().Key(p.keys.config(parent)).Build())
	defaults, err := res[0].AsStrMap()
	if err != nil {
		return job.TopicLayers{}, wrapRedis("topic settings", err)
	}
	patterns := map[string]job.TopicConfig{}
	for k, v := range defaults {
		if glob, ok := strings.CutPrefix(k, patternField); ok {
			patterns[glob] = job.TopicConfig{}
			for _, word := range strings.Fields(v) {
				if name, value, ok := strings.Cut(word, "="); ok {
					patterns[glob][name] = value
				}
			}
		}
		if strings.HasPrefix(k, "@") { // the bucket's marks and patterns (lua/lib.lua), not settings
			delete(defaults, k)
		}
	}
	l := job.TopicLayers{Defaults: defaults, File: job.TopicConfig{}, Run: job.TopicConfig{},
		Patterns: job.PatternsFor(patterns, topic)}
	if err := readLayers(res[1], l.File, l.Run); err != nil {
		return job.TopicLayers{}, err
	}
	below := l.Patterns.Over(l.Defaults)
	if parent != topic {
		file, run := job.TopicConfig{}, job.TopicConfig{}
		if err := readLayers(res[2], file, run); err != nil {
			return job.TopicLayers{}, err
		}
		l.Parent = run.Over(file)
		below = l.Parent.Over(below)
	}
	l.Effective = l.Run.Over(l.File.Over(below))
	return l, nil
}

// readLayers splits a topic's config hash into its file and run layers.
func readLayers(r rueidis.RedisResult, file, run job.TopicConfig) error {
	fields, err := r.AsStrMap()
	if err != nil {
		return wrapRedis("topic settings", err)
	}
	for f, v := range fields {
		if k, ok := strings.CutPrefix(f, fileLayer); ok {
			file[k] = v
		} else if k, ok := strings.CutPrefix(f, runLayer); ok {
			run[k] = v
		}
	}
	return nil
}
