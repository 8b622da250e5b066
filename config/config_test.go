package config

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

// The shipped conf.ini must parse and say exactly the defaults.
func TestShippedConfIsTheDefaults(t *testing.T) {
	got, err := Load("../conf.ini")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, Default()) {
		t.Fatalf("conf.ini differs from Default():\n got %+v\nwant %+v", got, Default())
	}
}

func TestValues(t *testing.T) {
	tests := []struct {
		text    string
		check   func(Config) bool
		wantErr string
	}{
		{text: "[redis]\nbuckets = 64", check: func(c Config) bool { return c.Buckets == 64 }},
		{text: "[jobs]\ndefault_ttr = 2.5", check: func(c Config) bool { return c.DefaultTTR == 2500*time.Millisecond }},
		{text: "[server]\nlog_level = debug", check: func(c Config) bool { return c.LogLevel.String() == "DEBUG" }},
		{text: "[redis]\nbuckets = 0", wantErr: "[redis] buckets"},
		{text: "[redis]\nbuckets = many", wantErr: "[redis] buckets"},
		{text: "[redis]\nbucket = 4", wantErr: "[redis] bucket: unknown key"},
		{text: "port = 4", wantErr: "[DEFAULT] port: unknown key"},
		{text: "[server]\nhttp = 8000", wantErr: "[server] http"},
		{text: "[redis]\nurl = http://x", wantErr: "[redis] url"},
		{text: "[jobs]\nmax_pop_timeout = soon", wantErr: "[jobs] max_pop_timeout"},
		{text: "[jobs]\ndefault_priority = -1", wantErr: "[jobs] default_priority"},
		{text: "[server]\nlog_level = loud", wantErr: "[server] log_level"},
		{text: "[web]\nallowed_hosts = gmq.internal, Proxy.example", check: func(c Config) bool {
			return reflect.DeepEqual(c.AllowedHosts, []string{"gmq.internal", "Proxy.example"})
		}},
		{text: "[server]\nallow_open_ports = maybe", wantErr: "[server] allow_open_ports"},
		{text: "[server]\nbody_memory = 1048576\nmax_request_body = 2097152", wantErr: "max_request_body"},
		{text: "[server]\nbody_memory = 1048576\nmax_request_body = 1048576\n[jobs]\nmax_body = 2097152\n[beanstalk]\nmax_job_size = 2097152",
			wantErr: "[beanstalk] max_job_size = 2097152 is over [server] body_memory"},
		{text: "[server]\nbody_memory = 1048576\nmax_request_body = 1048576\n[jobs]\nmax_body = 2097152\n[beanstalk]\nmax_job_size = 1048574",
			check: func(c Config) bool { return c.MaxJobSize == 1048574 }},
	}
	for _, tt := range tests {
		got, err := Parse([]byte(tt.text))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: error %v, want one naming %q", tt.text, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !tt.check(got) {
			t.Errorf("%q: %+v %v", tt.text, got, err)
		}
	}
}

func TestSet(t *testing.T) {
	c := Default()
	if err := c.Set("server.http", "127.0.0.1:9999"); err != nil || c.HTTP != "127.0.0.1:9999" {
		t.Fatalf("%v %v", c.HTTP, err)
	}
	if err := c.Set("redis.url", "nope"); err == nil {
		t.Fatal("bad URL accepted")
	}
}

func TestMissingFile(t *testing.T) {
	if _, err := Load(os.DevNull + "/none.ini"); err == nil {
		t.Fatal("no error for a missing file")
	}
}

func FuzzParse(f *testing.F) {
	text, err := os.ReadFile("../conf.ini")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(text)
	f.Add([]byte("[redis]\nbuckets = 3"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err == nil && (c.Buckets < 1 || c.MaxBody < 1 || c.Prefix == "") {
			t.Fatalf("accepted an invalid config: %+v", c)
		}
	})
}

func TestOpenPorts(t *testing.T) {
	tests := []struct {
		text    string
		open    int
		wantErr string
	}{
		{text: "", open: 0},
		{text: "[beanstalk]\naddr = 0.0.0.0:11300", open: 1},
		{text: "[beanstalk]\naddr = :11300\n[rpc]\naddr = 10.0.0.5:9503", open: 2},
		{text: "[beanstalk]\naddr = localhost:11300\n[rpc]\naddr = [::1]:9503", open: 0},
		{text: "[web]\ntoken = s3cret\n[beanstalk]\naddr = 0.0.0.0:11300", open: 1, wantErr: "[beanstalk] addr = 0.0.0.0:11300 listens beyond loopback"},
		{text: "[web]\ntoken = s3cret\n[beanstalk]\naddr = 0.0.0.0:11300\n[server]\nallow_open_ports = true", open: 1},
		{text: "[web]\ntoken = s3cret\n[beanstalk]\naddr =\n[rpc]\naddr =", open: 0},
		{text: "[kestrel]\ntext_addr = 0.0.0.0:2222\nthrift_addr = :2229", open: 2},
		{text: "[web]\ntoken = s3cret\n[kestrel]\ntext_addr = 10.0.0.5:2222", open: 1, wantErr: "[kestrel] text_addr = 10.0.0.5:2222 listens beyond loopback"},
	}
	for _, tt := range tests {
		c, err := Parse([]byte(tt.text))
		if err != nil {
			t.Fatalf("%q: %v", tt.text, err)
		}
		if got := len(c.OpenPorts()); got != tt.open {
			t.Errorf("%q: %d open ports, want %d", tt.text, got, tt.open)
		}
		err = c.CheckOpenPorts()
		if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%q: CheckOpenPorts() = %v, want %q", tt.text, err, tt.wantErr)
		}
	}
}

func TestTopicSections(t *testing.T) {
	c, err := Parse([]byte("[topics]\nmax_items = 10\n[topic.orders]\nmax_items = 100000\ndiscard_old_when_full = true\n[topic.a/b]\nmax_item_size = 512\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.TopicDefaults["max_items"] != "10" || c.Topics["orders"]["max_items"] != "100000" ||
		c.Topics["orders"]["discard_old_when_full"] != "true" || c.Topics["a/b"]["max_item_size"] != "512" {
		t.Fatalf("topic settings: %v %v", c.TopicDefaults, c.Topics)
	}
	c, err = Parse([]byte("[alias.all]\ndestinations = mail, sms ,\n"))
	if err != nil || !slices.Equal(c.Aliases["all"], []string{"mail", "sms"}) {
		t.Fatalf("alias: %v %v", c.Aliases, err)
	}
	for _, bad := range []struct{ text, want string }{
		{"[topics]\nmax_itemz = 1\n", "[topics] max_itemz"},
		{"[topic.orders]\nmax_items = -1\n", "[topic.orders] max_items"},
		{"[topic.bad~name]\nmax_items = 1\n", "[topic.bad~name]"},
		{"[topic.x]\ndiscard_old_when_full = maybe\n", "want true or false"},
		{"[topic.x]\nexpire_to = bad~name\n", "[topic.x] expire_to"},
		{"[alias.all]\n", "destinations is missing"},
		{"[alias.all]\ndestinations = a, b c\n", "[alias.all] destinations"},
		{"[alias.all]\nmembers = a\n", "unknown key"},
		{"[alias.all]\ndestinations = a, some\n[alias.some]\ndestinations = b\n", `"some" is an alias`},
		{"[schedule.nightly]\ncron = 0 3 * * *\nqueue = x\n", "[schedule.nightly] queue: unknown key"},
		{"[schedule.bad~name]\ncron = 0 3 * * *\n", "[schedule.bad~name]"},
		{"[schedule...]\ncron = 0 3 * * *\ntopic = r\nbody = x\n", `schedule name ".."`},
		{"[schedule.x]\ncron = 0 3 * * *\n\n[topics]\n[schedule.x] ; again\ncron = 0 4 * * *\n", "section [schedule.x] appears twice (lines 1 and 5)"},
		{"[topic.a]\nmax_items = 1\n[topic.a]\nmax_items = 2\n", "section [topic.a] appears twice"},
	} {
		if _, err := Parse([]byte(bad.text)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want an error naming %q", bad.text, err, bad.want)
		}
	}
}

// The token may come from a file; secrets are never quoted in errors.
func TestTokenFileAndSecretsInErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("  s3cret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Parse([]byte("[web]\ntoken_file = " + file + "\n"))
	if err != nil || c.Token != "s3cret-token" {
		t.Fatalf("token_file: %q %v", c.Token, err)
	}
	if _, err := Parse([]byte("[web]\ntoken = a\ntoken_file = " + file + "\n")); err == nil {
		t.Fatal("token and token_file both set: accepted")
	}
	if _, err := Parse([]byte("[web]\ntoken_file = " + filepath.Join(dir, "missing") + "\n")); err == nil {
		t.Fatal("a missing token_file: accepted")
	}
	_, err = Parse([]byte("[redis]\nurl = http://user:pa55word@host:1\n"))
	if err == nil || strings.Contains(err.Error(), "pa55word") {
		t.Fatalf("a bad Redis URL's error: %v, want one that does not show the password", err)
	}
}

// conf.ini documents every topic setting gmq knows (the README says it
// documents every setting): each is in its commented [topics] block.
func TestConfIniListsEveryTopicSetting(t *testing.T) {
	data, err := os.ReadFile("../conf.ini")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range job.TopicSettingNames() {
		if !strings.Contains(string(data), "\n; "+name+" =") {
			t.Errorf("conf.ini does not list the topic setting %s", name)
		}
	}
}

// The value conf.ini's commented [topics] block shows for each topic
// setting is gmq's own default, which a topic's config view shows as
// built_in (job.BuiltIn).
func TestConfIniShowsTheBuiltInDefaults(t *testing.T) {
	data, err := os.ReadFile("../conf.ini")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range job.TopicSettingNames() {
		m := regexp.MustCompile(`\n; ` + name + ` = ([^ \n]*)`).FindStringSubmatch(string(data))
		if m == nil || job.BuiltIn[name] == "" {
			continue // not listed (TestConfIniListsEveryTopicSetting says so), or off unless set
		}
		if m[1] != job.BuiltIn[name] {
			t.Errorf("conf.ini shows %s = %s, job.BuiltIn says %s", name, m[1], job.BuiltIn[name])
		}
	}
}

// [topic.PATTERN] sections: a name with '*' is a pattern, checked as a
// topic name but for its '*'s.
func TestTopicPatternSections(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		section, want string // want: "" parses, else the error says it
	}{
		{"[topic.crawl/*]\nmax_reserved = 3\n", ""},
		{"[topic.*]\nrate = 2.5\n", ""},
		{"[topic.crawl *]\nrate = 1\n", "topic pattern"},
		{"[topic.crawl/*]\nrate = fast\n", "rate"},
		{"[topic.p*]\nrate = 1\n" + manyPatterns(64), "more than 64 topic patterns"},
	} {
		file := filepath.Join(dir, "c.ini")
		if err := os.WriteFile(file, []byte(c.section), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load(file)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.section, err)
		case c.want == "" && len(cfg.Topics) != 1:
			t.Errorf("%q: topics %v", c.section, cfg.Topics)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: %v, want an error naming %q", c.section, err, c.want)
		}
	}
}

// manyPatterns is n [topic.pN*] sections.
func manyPatterns(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("[topic.q" + strconv.Itoa(i) + "*]\nrate = 1\n")
	}
	return b.String()
}
