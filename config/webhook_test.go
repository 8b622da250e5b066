package config

import (
	"slices"
	"strings"
	"testing"
)

// TestWebhookSettings: what a conf.ini may say of HTTP push delivery, and
// the error a start gets for what it may not.
func TestWebhookSettings(t *testing.T) {
	const allow = "[webhook]\nallow_hosts = hooks.example.com, 10.0.0.0/8\n"
	for _, tc := range []struct {
		name, text, want string // want: "" parses, else the error says it
	}{
		{"a topic's own", allow + "[topic.hooks]\ndeliver_to = https://hooks.example.com/x\ndeliver_secret = whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n", ""},
		{"an address in a listed network", allow + "[topic.hooks]\ndeliver_to = http://10.1.2.3:8080/x\n", ""},
		{"delivery off", "[topic.hooks]\ndeliver_to = https://hooks.example.com/x\n", "allow_hosts is empty"},
		{"a host not listed", allow + "[topic.hooks]\ndeliver_to = https://evil.example.com/x\n", `host "evil.example.com" port 443 is not in conf.ini's [webhook] allow_hosts`},
		{"in [topics]", allow + "[topics]\ndeliver_to = https://hooks.example.com/x\n", "[topics] deliver_to: a setting of a topic's own"},
		{"in a pattern", allow + "[topic.h*]\ndeliver_secret = whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n", "not of a pattern's"},
		{"a timeout the TTR does not outlast", allow + "[jobs]\ndefault_ttr = 30s\n[topic.hooks]\ndeliver_to = https://hooks.example.com/x\ndeliver_timeout = 30\n", "not under [jobs] default_ttr"},
		{"a timeout in [topics] too", allow + "[jobs]\ndefault_ttr = 5s\n[topics]\ndeliver_timeout = 10\n[topic.hooks]\ndeliver_to = https://hooks.example.com/x\n", "not under [jobs] default_ttr"},
		{"a bad allow_hosts", "[webhook]\nallow_hosts = 10.0.0.0/40\n", "not a network"},
		{"ftp", allow + "[topic.hooks]\ndeliver_to = ftp://hooks.example.com/x\n", "want an http or https URL"},
		{"credentials in the URL", allow + "[topic.hooks]\ndeliver_to = https://u:p@hooks.example.com/x\n", "without user info"},
		{"a secret without its prefix", allow + "[topic.hooks]\ndeliver_secret = hunter2hunter2hunter2\n", "starting whsec_"},
		{"three secrets", allow + "[topic.hooks]\ndeliver_secret = whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n", "or two separated by a space"},
		{"a timeout past the bound", allow + "[topic.hooks]\ndeliver_timeout = 901\n", "from 1 to 900"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.text))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("the error shows the secret: %v", err)
			}
		})
	}
}

// TestOldSectionName: [webhook] was [delivery]. A file that says the old
// name reads as the new and is noted (gmq start warns); one that says both
// is refused as a section given twice, and an error names the section as
// the file wrote it.
func TestOldSectionName(t *testing.T) {
	for _, tc := range []struct {
		name, text, err string // err: "" parses
		old             []string
	}{
		{"the new name", "[webhook]\nallow_hosts = 10.0.0.0/8\nmax_in_flight = 3\n", "", nil},
		{"the old name", "[delivery]\nallow_hosts = 10.0.0.0/8\nmax_in_flight = 3\n", "", []string{"[delivery] is now [webhook]"}},
		{"both", "[delivery]\nallow_hosts = 10.0.0.0/8\n[webhook]\nmax_in_flight = 3\n",
			"section [webhook] appears twice (lines 1 and 3): give it once ([delivery] is its old name)", nil},
		{"a bad value under the old name", "[delivery]\nmax_in_flight = 0\n", "[delivery] max_in_flight = \"0\"", nil},
		{"an unknown key under the old name", "[delivery]\nhosts = x\n", "[delivery] hosts: unknown key", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.text))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an error saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.WebhookAllowHosts, []string{"10.0.0.0/8"}) || c.WebhookMaxInFlight != 3 {
				t.Fatalf("read allow_hosts %q, max_in_flight %d", c.WebhookAllowHosts, c.WebhookMaxInFlight)
			}
			if !slices.Equal(c.OldSections, tc.old) {
				t.Fatalf("OldSections = %q, want %q", c.OldSections, tc.old)
			}
		})
	}
}

// A key given twice in one section stops a start, as a section given
// twice does: two deliver_secret lines would have kept only the second.
func TestKeyGivenTwice(t *testing.T) {
	_, err := Parse([]byte("[topic.hooks]\ndeliver_secret = whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\nmax_items = 5\ndeliver_secret = whsec_dGhlIG90aGVyIHNlY3JldCBrZXk=\n"))
	if err == nil || !strings.Contains(err.Error(), "[topic.hooks] deliver_secret appears twice (lines 2 and 4)") {
		t.Fatalf("got %v", err)
	}
	if _, err := Parse([]byte("[topic.a]\nmax_items = 5\n[topic.b]\nmax_items = 6\n")); err != nil {
		t.Fatalf("one key in two sections: %v", err)
	}
}
