package config

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gmq/gmq/job"
	"gopkg.in/ini.v1"
)

// renamed maps a section's old name to its name now. A file that still
// says the old one reads as if it said the new (Config.OldSections names
// it, and gmq start warns); saying both is a section given twice.
var renamed = map[string]string{
	"delivery": "webhook", // HTTP push delivery: "delivery" is also a popped job's token
}

// canonical is a section's name now, whichever name the file gave it.
func canonical(section string) string {
	if now := renamed[section]; now != "" {
		return now
	}
	return section
}

// checkSections refuses a section that appears twice. ini merges them
// silently (the later keys win), so a second [schedule.x] or [topic.t]
// further down a long file would change the first without a word.
// A key given twice in one section is refused too, for the same reason: the
// second deliver_secret of a rotation, written as two lines, would have
// been the only one.
func checkSections(text []byte) error {
	first := map[string]int{}
	section, keys := "", map[string]int{}
	scan := bufio.NewScanner(bytes.NewReader(text))
	scan.Buffer(nil, len(text)+1)
	for line := 1; scan.Scan(); line++ {
		name, ok := sectionName(scan.Text())
		if !ok {
			if key, ok := keyName(scan.Text()); ok {
				if at, seen := keys[key]; seen {
					return fmt.Errorf("[%s] %s appears twice (lines %d and %d): give it once", section, key, at, line)
				}
				keys[key] = line
			}
			continue
		}
		if at, seen := first[canonical(name)]; seen {
			return fmt.Errorf("section [%s] appears twice (lines %d and %d): give it once%s", canonical(name), at, line, oldName(canonical(name)))
		}
		first[canonical(name)] = line
		section, keys = name, map[string]int{}
	}
	return nil
}

// oldName says which old name a section had, if it had one.
func oldName(section string) string {
	for old, now := range renamed {
		if now == section {
			return fmt.Sprintf(" ([%s] is its old name)", old)
		}
	}
	return ""
}

// keyName reads a "key = value" line's key (not a comment or a blank line).
func keyName(line string) (string, bool) {
	line = strings.TrimSpace(line)
	if line == "" || line[0] == ';' || line[0] == '#' {
		return "", false
	}
	key, _, ok := strings.Cut(line, "=")
	if key = strings.TrimSpace(key); !ok || key == "" {
		return "", false
	}
	return key, true
}

// sectionName reads a "[name]" line as ini.v1 does: the name runs to the
// line's last ']', and what follows it is ignored ("[webhook] x" is
// [webhook]), so that every section ini reads is checked here.
func sectionName(line string) (string, bool) {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "[") {
		return "", false
	}
	end := strings.LastIndex(line, "]")
	if end < 0 {
		return "", false
	}
	return strings.TrimSpace(line[1:end]), true
}

// errNotTopic: a section that is not a topic settings or alias section.
var errNotTopic = errors.New("not a topic section")

// applyTopic reads [topics] (every topic's defaults) and [topic.NAME] (one
// topic's settings), or says errNotTopic.
func (c *Config) applyTopic(sec *ini.Section) error {
	var into job.TopicConfig
	switch name := sec.Name(); {
	case name == "topics":
		if c.TopicDefaults == nil {
			c.TopicDefaults = job.TopicConfig{}
		}
		into = c.TopicDefaults
	case strings.HasPrefix(name, "alias."):
		return c.applyAlias(sec)
	case strings.HasPrefix(name, "schedule."):
		return c.applySchedule(sec)
	case strings.HasPrefix(name, "topic."):
		topic := strings.TrimPrefix(name, "topic.")
		check := job.ValidateTopic
		if job.IsTopicPattern(topic) { // [topic.crawl/*]: the settings of every topic it matches
			check = job.ValidateTopicPattern
			if c.Topics[topic] == nil && c.countPatterns() >= job.MaxTopicPatterns {
				return fmt.Errorf("[%s]: more than %d topic patterns (each is matched on every call that reads settings)", name, job.MaxTopicPatterns)
			}
		}
		if err := check(topic); err != nil {
			return fmt.Errorf("[%s]: %w", name, err)
		}
		if c.Topics == nil {
			c.Topics = map[string]job.TopicConfig{}
		}
		if c.Topics[topic] == nil {
			c.Topics[topic] = job.TopicConfig{}
		}
		into = c.Topics[topic]
	default:
		return errNotTopic
	}
	for _, k := range sec.Keys() {
		v, err := job.CheckTopicSetting(k.Name(), strings.TrimSpace(k.Value()))
		if err != nil {
			return fmt.Errorf("[%s] %s: %w", sec.Name(), k.Name(), err)
		}
		into[k.Name()] = v
	}
	return nil
}

// countPatterns is how many topic patterns c holds.
func (c *Config) countPatterns() int {
	n := 0
	for name := range c.Topics {
		if job.IsTopicPattern(name) {
			n++
		}
	}
	return n
}

// applyAlias reads [alias.NAME]: destinations, a comma-separated list of
// topics (not aliases: an alias of aliases could loop).
func (c *Config) applyAlias(sec *ini.Section) error {
	alias := strings.TrimPrefix(sec.Name(), "alias.")
	if err := job.ValidateTopic(alias); err != nil {
		return fmt.Errorf("[%s]: %w", sec.Name(), err)
	}
	var dests []string
	for _, k := range sec.Keys() {
		if k.Name() != "destinations" {
			return fmt.Errorf("[%s] %s: unknown key (an alias has only destinations)", sec.Name(), k.Name())
		}
		for _, d := range strings.Split(k.Value(), ",") {
			if d = strings.TrimSpace(d); d == "" {
				continue
			}
			if err := job.ValidateTopic(d); err != nil {
				return fmt.Errorf("[%s] destinations: %w", sec.Name(), err)
			}
			dests = append(dests, d)
		}
	}
	if len(dests) == 0 {
		return fmt.Errorf("[%s]: destinations is missing or empty", sec.Name())
	}
	if c.Aliases == nil {
		c.Aliases = map[string][]string{}
	}
	c.Aliases[alias] = dests
	return nil
}

// ScheduleKeys are the keys of a [schedule.NAME] section: when it fires
// (cron, tz, overlap, paused) and the job it pushes (topic, body, priority,
// ttr, delay, group).
var ScheduleKeys = []string{"cron", "tz", "overlap", "paused", "topic", "body", "priority", "ttr", "delay", "group"}

// applySchedule reads [schedule.NAME]; its values are checked as a whole
// by the dispatcher when the schedule is written.
func (c *Config) applySchedule(sec *ini.Section) error {
	name := strings.TrimPrefix(sec.Name(), "schedule.")
	if err := job.ValidateScheduleName(name); err != nil {
		return fmt.Errorf("[%s]: %w", sec.Name(), err)
	}
	keys := map[string]string{}
	for _, k := range sec.Keys() {
		if !slices.Contains(ScheduleKeys, k.Name()) {
			return fmt.Errorf("[%s] %s: unknown key (a schedule has %s)", sec.Name(), k.Name(), strings.Join(ScheduleKeys, ", "))
		}
		keys[k.Name()] = strings.TrimSpace(k.Value())
	}
	if c.Schedules == nil {
		c.Schedules = map[string]map[string]string{}
	}
	c.Schedules[name] = keys
	return nil
}

// checkAliases refuses an alias among destinations.
func (c *Config) checkAliases() error {
	for name, dests := range c.Aliases {
		for _, d := range dests {
			if _, ok := c.Aliases[d]; ok {
				return fmt.Errorf("[alias.%s] destinations: %q is an alias; destinations must be topics", name, d)
			}
		}
	}
	return nil
}
