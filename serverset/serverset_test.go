package serverset

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

// validOptions are options New takes; tests change one field at a time.
func validOptions() Options {
	return Options{
		Hosts:          []string{"127.0.0.1:2181"},
		PathPrefix:     "/gmq/serverset",
		AdvertiseHost:  "10.1.2.3",
		Main:           Endpoint{Name: "memcache", Port: 22133},
		Additional:     map[string]int{"thrift": 2229, "text": 2222, "http": 8080},
		SessionTimeout: 10 * time.Second,
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		tweak func(*Options)
		field string // "" when New takes it
	}{
		{"valid", func(*Options) {}, ""},
		{"bare host", func(o *Options) { o.Hosts = []string{"zk1", "zk2:2182"} }, ""},
		{"ipv6 host", func(o *Options) { o.Hosts = []string{"[::1]:2181"} }, ""},
		{"loopback advertised", func(o *Options) { o.AdvertiseHost = "127.0.0.1" }, ""},
		{"main listed again, same port", func(o *Options) { o.Additional["memcache"] = 22133 }, ""},
		{"no additional", func(o *Options) { o.Additional = nil }, ""},
		{"no hosts", func(o *Options) { o.Hosts = nil }, "Hosts"},
		{"empty host", func(o *Options) { o.Hosts = []string{""} }, "Hosts"},
		{"chroot", func(o *Options) { o.Hosts = []string{"zk1:2181/gmq"} }, "Hosts"},
		{"bad port", func(o *Options) { o.Hosts = []string{"zk1:0"} }, "Hosts"},
		{"no prefix", func(o *Options) { o.PathPrefix = "" }, "PathPrefix"},
		{"root prefix", func(o *Options) { o.PathPrefix = "/" }, "PathPrefix"},
		{"relative prefix", func(o *Options) { o.PathPrefix = "gmq" }, "PathPrefix"},
		{"trailing slash", func(o *Options) { o.PathPrefix = "/gmq/" }, "PathPrefix"},
		{"dot dot", func(o *Options) { o.PathPrefix = "/gmq/../x" }, "PathPrefix"},
		{"no advertise host", func(o *Options) { o.AdvertiseHost = "" }, "AdvertiseHost"},
		{"wildcard v4", func(o *Options) { o.AdvertiseHost = "0.0.0.0" }, "AdvertiseHost"},
		{"wildcard v6", func(o *Options) { o.AdvertiseHost = "::" }, "AdvertiseHost"},
		{"main unnamed", func(o *Options) { o.Main.Name = "" }, "Main"},
		{"main no port", func(o *Options) { o.Main.Port = 0 }, "Main"},
		{"additional bad port", func(o *Options) { o.Additional["http"] = 70000 }, "Additional"},
		{"additional unnamed", func(o *Options) { o.Additional[""] = 80 }, "Additional"},
		{"main listed again, other port", func(o *Options) { o.Additional["memcache"] = 1 }, "Additional"},
		{"no session timeout", func(o *Options) { o.SessionTimeout = 0 }, "SessionTimeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := validOptions()
			tc.tweak(&opts)
			s, err := New(opts)
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tc.field == "" && s == nil:
				t.Fatal("New returned no ServerSet")
			case tc.field != "" && !errors.Is(err, ErrInvalid):
				t.Fatalf("New: %v, want ErrInvalid", err)
			case tc.field != "" && !strings.Contains(err.Error(), tc.field+":"):
				t.Fatalf("New: %q does not name %s", err, tc.field)
			}
		})
	}
}

// TestMemberData pins the JSON a Finagle client reads: the field names of
// Twitter commons' JsonCodec, the main endpoint among the named ones.
func TestMemberData(t *testing.T) {
	t.Parallel()
	s, err := New(validOptions())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"serviceEndpoint":{"host":"10.1.2.3","port":22133},
		"additionalEndpoints":{"memcache":{"host":"10.1.2.3","port":22133},"thrift":{"host":"10.1.2.3","port":2229},
			"text":{"host":"10.1.2.3","port":2222},"http":{"host":"10.1.2.3","port":8080}},
		"status":"ALIVE"}`
	sameJSON(t, string(s.data), want)
}

// sameJSON fails unless got and want are the same JSON value.
func sameJSON(tb testing.TB, got, want string) {
	tb.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		tb.Fatalf("member data %q: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		tb.Fatalf("expected %q: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		tb.Fatalf("member data\n got %s\nwant %s", got, want)
	}
}

func TestMembershipOf(t *testing.T) {
	t.Parallel()
	for st, want := range map[job.Status]membership{
		job.Up:         {Write: true, Read: true},
		job.WriteAvoid: {Read: true}, // kestrel: write DEAD, read ALIVE
		job.ReadOnly:   {Read: true},
		job.Quiescent:  {},
		job.Status(42): {}, // unknown: as kestrel's Down
	} {
		if got := membershipOf(st); got != want {
			t.Errorf("membershipOf(%v) = %+v, want %+v", st, got, want)
		}
	}
}

// TestNothingBeforeStatus: a broker is in no set until SetStatus.
func TestNothingBeforeStatus(t *testing.T) {
	t.Parallel()
	s, err := New(validOptions())
	if err != nil {
		t.Fatal(err)
	}
	if got := s.wanted(); got != (membership{}) {
		t.Fatalf("before SetStatus: %+v, want no set", got)
	}
	s.SetStatus(job.Up)
	s.SetStatus(job.ReadOnly) // never blocks, though Run is not running
	if got := s.wanted(); got != (membership{Read: true}) {
		t.Fatalf("after ReadOnly: %+v, want read only", got)
	}
}
