package pool

import (
	"context"
	"strings"

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
// Each write is one script (settings.lua), so a push never sees a
// half-written layer.
func (p *Pool) ApplyTopicConfig(ctx context.Context, defaults job.TopicConfig, topics map[string]job.TopicConfig) error {
	for b := range p.opts.Buckets {
		key := p.keys.buckets[b].defaults
		if err := p.writeSettings(ctx, key, key, "", true, false, defaults); err != nil {
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
// one), and with replace, removing the layer's other keys. The topic is
// listed as configured first, so a reload finds its hash whatever happens
// after; the bucket's defaults then say a topic there has settings, so the
// push script reads them (lib.lua topic_config).
func (p *Pool) setLayer(ctx context.Context, topic, layer string, values job.TopicConfig, replace bool) error {
	if err := p.client.Do(ctx, p.client.B().Sadd().Key(p.keys.configured()).Member(topic).Build()).Error(); err != nil {
		return wrapRedis("topic settings", err)
	}
	defaults := p.keys.buckets[p.keys.bucketOf(topic)].defaults
	return wrapRedis("topic settings", p.writeSettings(ctx, p.keys.config(topic), defaults, layer, replace, true, values))
}

// writeSettings runs settings.lua on hash key (in the slot of the bucket
// whose defaults hash is defaults).
func (p *Pool) writeSettings(ctx context.Context, key, defaults, prefix string, replace, mark bool, values job.TopicConfig) error {
	flag := func(b bool) string {
		if b {
			return "1"
		}
		return ""
	}
	args := []string{prefix, flag(replace), flag(mark)}
	for k, v := range values {
		args = append(args, k, v)
	}
	return settingsScript.Exec(ctx, p.client, []string{key, defaults}, args).Error()
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
