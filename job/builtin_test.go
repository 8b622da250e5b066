package job

import "testing"

// Every setting gmq knows has its built-in value, each one the setting's
// own rule takes ("" for those off when unset), so a topic's config view
// shows every setting.
func TestBuiltInCoversEverySetting(t *testing.T) {
	for _, name := range TopicSettingNames() {
		v, ok := BuiltIn[name]
		if !ok {
			t.Errorf("%s has no built-in value (job.BuiltIn)", name)
			continue
		}
		if got, err := CheckTopicSetting(name, v); err != nil || got != v {
			t.Errorf("%s's built-in value %q: checked as %q, %v", name, v, got, err)
		}
	}
	for name := range BuiltIn {
		if _, ok := topicSettings[name]; !ok {
			t.Errorf("job.BuiltIn has %s, which is no setting", name)
		}
	}
}

// Sources names the topmost layer that sets each setting, else built_in.
func TestSources(t *testing.T) {
	l := TopicLayers{
		Defaults: TopicConfig{"max_attempts": "5", "rate": "1"},
		Patterns: TopicConfig{"rate": "2", "burst": "3"},
		Parent:   TopicConfig{"max_items": "9"},
		File:     TopicConfig{"max_items": "10", "rate": "4"},
		Run:      TopicConfig{"keep_results": "0", "unknown_to_this_broker": "1"},
	}
	l.Effective = l.Run.Over(l.File.Over(l.Parent.Over(l.Patterns.Over(l.Defaults))))
	src, all := l.Sources(), l.All()
	for name, want := range map[string][2]string{
		"max_attempts": {FromDefaults, "5"},
		"rate":         {FromFile, "4"},
		"burst":        {FromPatterns, "3"},
		"max_items":    {FromFile, "10"},
		"keep_results": {FromRun, "0"},
		"backoff":      {FromBuiltIn, "exponential"},
		"max_result":   {FromBuiltIn, "16384"},
	} {
		if src[name] != want[0] || all[name] != want[1] {
			t.Errorf("%s: from %q, %q; want from %q, %q", name, src[name], all[name], want[0], want[1])
		}
	}
	if len(src) != len(BuiltIn) {
		t.Errorf("sources of %d settings, want every one of the %d gmq knows", len(src), len(BuiltIn))
	}
}
