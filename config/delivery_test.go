package config

import (
	"strings"
	"testing"
)

// TestDeliverySettings: what a conf.ini may say of HTTP push delivery, and
// the error a start gets for what it may not.
func TestDeliverySettings(t *testing.T) {
	const allow = "[delivery]\nallow_hosts = hooks.example.com, 10.0.0.0/8\n"
	for _, tc := range []struct {
		name, text, want string // want: "" parses, else the error says it
	}{
		{"a topic's own", allow + "[topic.hooks]\ndeliver_to = https://hooks.example.com/x\ndeliver_secret = whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n", ""},
		{"an address in a listed network", allow + "[topic.hooks]\ndeliver_to = http://10.1.2.3:8080/x\n", ""},
		{"delivery off", "[topic.hooks]\ndeliver_to = https://hooks.example.com/x\n", "allow_hosts is empty"},
		{"a host not listed", allow + "[topic.hooks]\ndeliver_to = https://evil.example.com/x\n", `host "evil.example.com" port 443 is not in conf.ini's [delivery] allow_hosts`},
		{"in [topics]", allow + "[topics]\ndeliver_to = https://hooks.example.com/x\n", "[topics] deliver_to: a setting of a topic's own"},
		{"in a pattern", allow + "[topic.h*]\ndeliver_secret = whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n", "not of a pattern's"},
		{"a timeout the TTR does not outlast", allow + "[jobs]\ndefault_ttr = 30s\n[topic.hooks]\ndeliver_to = https://hooks.example.com/x\ndeliver_timeout = 30\n", "not under [jobs] default_ttr"},
		{"a timeout in [topics] too", allow + "[jobs]\ndefault_ttr = 5s\n[topics]\ndeliver_timeout = 10\n[topic.hooks]\ndeliver_to = https://hooks.example.com/x\n", "not under [jobs] default_ttr"},
		{"a bad allow_hosts", "[delivery]\nallow_hosts = 10.0.0.0/40\n", "not a network"},
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
