package config

import "testing"

// A section line with text after its bracket ("[webhook] x") is a section
// to ini.v1, which reads it as [webhook], but not to checkSections, so the
// file gives [delivery] and [webhook] both and neither is refused: the two
// are merged (issue 51: "both at once refused"). The same line lets any
// section be given twice ([server] ... [server] x).
func TestSectionLineWithTrailingTextCannotGiveBothNames(t *testing.T) {
	for _, text := range []string{
		"[delivery]\nallow_hosts = a.example\n[webhook] x\nmax_in_flight = 3\n",
		"[server]\nhttp = 127.0.0.1:8000\n[server] again\nlog_level = debug\n",
	} {
		if c, err := Parse([]byte(text)); err == nil {
			t.Errorf("%q: accepted (allow_hosts %v, max_in_flight %d, log level %v): want a section given twice refused",
				text, c.WebhookAllowHosts, c.WebhookMaxInFlight, c.LogLevel)
		}
	}
}
