package pool

import (
	"context"
	"strings"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
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
	// configuredMark in a bucket's defaults says a topic of the bucket has a
	// config hash (lib.lua CONFIGURED): buckets without one skip reading it.
	configuredMark = "@configured"
)

// TopicLayers are a topic's settings, layer by layer, and the result.
type TopicLayers struct {
	Defaults, File, Run, Effective job.TopicConfig
}

// ApplyTopicConfig writes conf.ini's topic settings: defaults into every
// bucket's copy, each named topic's section into its file layer; topics
// named before but not now lose their file layer. Run-time changes stay.
// Each bucket's and each topic's write is one MULTI, so a push never sees a
// half-written layer.
func (p *Pool) ApplyTopicConfig(ctx context.Context, defaults job.TopicConfig, topics map[string]job.TopicConfig) error {
	for b := range p.opts.Buckets {
		key := p.keys.buckets[b].defaults
		fields, err := p.client.Do(ctx, p.client.B().Hkeys().Key(key).Build()).AsStrSlice()
		if err != nil {
			return wrapRedis("apply topic defaults", err)
		}
		cmds := rueidis.Commands{p.client.B().Multi().Build()}
		var drop []string
		for _, f := range fields {
			if f != configuredMark && defaults[f] == "" {
				drop = append(drop, f)
			}
		}
		if len(drop) > 0 {
			cmds = append(cmds, p.client.B().Hdel().Key(key).Field(drop...).Build())
		}
		if len(defaults) > 0 {
			hset := p.client.B().Hset().Key(key).FieldValue()
			for k, v := range defaults {
				hset = hset.FieldValue(k, v)
			}
			cmds = append(cmds, hset.Build())
		}
		cmds = append(cmds, p.client.B().Exec().Build())
		if err := p.transaction(ctx, cmds); err != nil {
			return wrapRedis("apply topic defaults", err)
		}
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
		names[t] = true
	}
	for t := range names {
		if err := p.setLayer(ctx, t, fileLayer, topics[t], true); err != nil {
			return err
		}
	}
	return nil
}

// SetTopicConfig changes a topic's run-time settings: each key to its value,
// or, with "", back to what conf.ini says.
func (p *Pool) SetTopicConfig(ctx context.Context, topic string, changes job.TopicConfig) error {
	return p.setLayer(ctx, topic, runLayer, changes, false)
}

// setLayer writes a topic's layer: the keys given (an empty value removes
// one), and with replace, removing the layer's other keys.
func (p *Pool) setLayer(ctx context.Context, topic, layer string, values job.TopicConfig, replace bool) error {
	key := p.keys.config(topic)
	var drop []string
	if replace {
		fields, err := p.client.Do(ctx, p.client.B().Hkeys().Key(key).Build()).AsStrSlice()
		if err != nil {
			return wrapRedis("topic settings", err)
		}
		for _, f := range fields {
			if s, ok := strings.CutPrefix(f, layer); ok && values[s] == "" {
				drop = append(drop, f)
			}
		}
	}
	var set [][2]string
	for k, v := range values {
		if v == "" {
			drop = append(drop, layer+k)
		} else {
			set = append(set, [2]string{layer + k, v})
		}
	}
	cmds := rueidis.Commands{p.client.B().Multi().Build()}
	if len(drop) > 0 {
		cmds = append(cmds, p.client.B().Hdel().Key(key).Field(drop...).Build())
	}
	if len(set) > 0 {
		hset := p.client.B().Hset().Key(key).FieldValue()
		for _, f := range set {
			hset = hset.FieldValue(f[0], f[1])
		}
		cmds = append(cmds, hset.Build())
	}
	// The bucket's defaults say a topic there has settings of its own, so the
	// push script reads them (lib.lua topic_config); the mark is never removed.
	cmds = append(cmds, p.client.B().Hset().Key(p.keys.buckets[p.keys.bucketOf(topic)].defaults).FieldValue().
		FieldValue(configuredMark, "1").Build(), p.client.B().Exec().Build())
	if err := p.transaction(ctx, cmds); err != nil {
		return wrapRedis("topic settings", err)
	}
	return wrapRedis("topic settings", p.client.Do(ctx, p.client.B().Sadd().Key(p.keys.configured()).Member(topic).Build()).Error())
}

// TopicConfig reads a topic's settings, layer by layer.
func (p *Pool) TopicConfig(ctx context.Context, topic string) (TopicLayers, error) {
	res := p.client.DoMulti(ctx,
		p.client.B().Hgetall().Key(p.keys.buckets[p.keys.bucketOf(topic)].defaults).Build(),
		p.client.B().Hgetall().Key(p.keys.config(topic)).Build())
	defaults, err := res[0].AsStrMap()
	if err != nil {
		return TopicLayers{}, wrapRedis("topic settings", err)
	}
	delete(defaults, configuredMark)
	fields, err := res[1].AsStrMap()
	if err != nil {
		return TopicLayers{}, wrapRedis("topic settings", err)
	}
	l := TopicLayers{Defaults: defaults, File: job.TopicConfig{}, Run: job.TopicConfig{}}
	for f, v := range fields {
		if k, ok := strings.CutPrefix(f, fileLayer); ok {
			l.File[k] = v
		} else if k, ok := strings.CutPrefix(f, runLayer); ok {
			l.Run[k] = v
		}
	}
	l.Effective = l.Run.Over(l.File.Over(l.Defaults))
	return l, nil
}

// transaction runs cmds (MULTI … EXEC) on a connection of their own, so
// that no other caller's command lands inside, and returns the first failure.
func (p *Pool) transaction(ctx context.Context, cmds rueidis.Commands) error {
	return p.client.Dedicated(func(c rueidis.DedicatedClient) error {
		for _, r := range c.DoMulti(ctx, cmds...) {
			if err := r.Error(); err != nil {
				return err
			}
		}
		return nil
	})
}
