package client

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The Standard Webhooks spec's own example: if this passes, a receiver
// checks what any Standard Webhooks sender signs, gmq's broker among them.
const (
	specSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specStamp  = "1614265330"
	specBody   = `{"test": 2432232314}`
	specSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	// otherSecret is a second key (32 bytes), as while rotating.
	otherSecret = "whsec_c2Vjb25kLWtleS1vZi0zMi1ieXRlcy0tLS0tLS0tLS0="
)

var specAt = time.Unix(1614265330, 0)

// specHeader is the spec's delivery's headers, as net/http gives them.
func specHeader(sig string) http.Header {
	h := http.Header{}
	h.Set("webhook-id", specID)
	h.Set("webhook-timestamp", specStamp)
	h.Set("webhook-signature", sig)
	return h
}

// sign is SignWebhook, failing the test on an error.
func sign(t *testing.T, secret, id string, at time.Time, body string) string {
	t.Helper()
	sig, err := SignWebhook(secret, id, at, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

func TestSignWebhookKnownVector(t *testing.T) {
	if got := sign(t, specSecret, specID, specAt, specBody); got != specSig {
		t.Fatalf("SignWebhook = %q, want the spec's %q", got, specSig)
	}
	// Two keys: a signature for each, in the secret's order.
	both := sign(t, specSecret+" "+otherSecret, specID, specAt, specBody)
	if parts := strings.Fields(both); len(parts) != 2 || parts[0] != specSig || parts[1] != sign(t, otherSecret, specID, specAt, specBody) {
		t.Fatalf("SignWebhook with two secrets = %q", both)
	}
}

// verdict is what a case expects: nil, ErrWebhookSignature (a refusal), or
// errSecret (the caller's error: not ErrWebhookSignature).
var errSecret = errors.New("a bad secret")

func TestVerifyWebhook(t *testing.T) {
	rotated := sign(t, specSecret+" "+otherSecret, specID, specAt, specBody)
	otherOnly := sign(t, otherSecret, specID, specAt, specBody)
	// A v2 signature (a made-up later scheme) with the right bytes: ignored.
	v2 := "v2," + strings.TrimPrefix(specSig, "v1,")
	withHeader := func(edit func(http.Header)) http.Header {
		h := specHeader(specSig)
		edit(h)
		return h
	}
	tests := []struct {
		name   string
		secret string
		header http.Header
		body   string
		now    time.Time
		want   error
	}{
		{"the spec's vector", specSecret, specHeader(specSig), specBody, specAt, nil},

		// Rotation: the broker signs with both keys; a receiver given
		// either, or both, takes it; a receiver given both takes a
		// delivery signed with either alone.
		{"signed with two, checked with the first", specSecret, specHeader(rotated), specBody, specAt, nil},
		{"signed with two, checked with the second", otherSecret, specHeader(rotated), specBody, specAt, nil},
		{"signed with the old, checked with both", otherSecret + " " + specSecret, specHeader(specSig), specBody, specAt, nil},
		{"signed with the new, checked with both", specSecret + " " + otherSecret, specHeader(otherOnly), specBody, specAt, nil},
		{"signed with another key only", specSecret, specHeader(otherOnly), specBody, specAt, ErrWebhookSignature},

		// The tolerance: 300 s either way passes, 301 s does not.
		{"300 s old", specSecret, specHeader(specSig), specBody, specAt.Add(300 * time.Second), nil},
		{"301 s old", specSecret, specHeader(specSig), specBody, specAt.Add(301 * time.Second), ErrWebhookSignature},
		{"300 s ahead", specSecret, specHeader(specSig), specBody, specAt.Add(-300 * time.Second), nil},
		{"301 s ahead", specSecret, specHeader(specSig), specBody, specAt.Add(-301 * time.Second), ErrWebhookSignature},

		// What is signed: the body's bytes, the id, the timestamp.
		{"a body changed", specSecret, specHeader(specSig), `{"test": 2432232315}`, specAt, ErrWebhookSignature},
		{"a body re-encoded", specSecret, specHeader(specSig), `{"test":2432232314}`, specAt, ErrWebhookSignature},
		{"an id changed", specSecret, withHeader(func(h http.Header) { h.Set("webhook-id", specID+"x") }), specBody, specAt, ErrWebhookSignature},
		{"a timestamp changed", specSecret, withHeader(func(h http.Header) { h.Set("webhook-timestamp", "1614265331") }), specBody, specAt, ErrWebhookSignature},
		{"a signature changed", specSecret, specHeader(strings.Replace(specSig, "g0h", "g0i", 1)), specBody, specAt, ErrWebhookSignature},
		{"a signature without its version", specSecret, specHeader(strings.TrimPrefix(specSig, "v1,")), specBody, specAt, ErrWebhookSignature},

		{"a timestamp with a fraction", specSecret, withHeader(func(h http.Header) { h.Set("webhook-timestamp", specStamp+".0") }), specBody, specAt, ErrWebhookSignature},
		{"a timestamp with a sign", specSecret, withHeader(func(h http.Header) { h.Set("webhook-timestamp", "+"+specStamp) }), specBody, specAt, ErrWebhookSignature},
		{"a timestamp in words", specSecret, withHeader(func(h http.Header) { h.Set("webhook-timestamp", "now") }), specBody, specAt, ErrWebhookSignature},
		{"a timestamp past int64", specSecret, withHeader(func(h http.Header) { h.Set("webhook-timestamp", "99999999999999999999") }), specBody, specAt, ErrWebhookSignature},

		{"no webhook-id", specSecret, withHeader(func(h http.Header) { h.Del("webhook-id") }), specBody, specAt, ErrWebhookSignature},
		{"no webhook-timestamp", specSecret, withHeader(func(h http.Header) { h.Del("webhook-timestamp") }), specBody, specAt, ErrWebhookSignature},
		{"no webhook-signature", specSecret, withHeader(func(h http.Header) { h.Del("webhook-signature") }), specBody, specAt, ErrWebhookSignature},
		{"an empty webhook-signature", specSecret, specHeader(""), specBody, specAt, ErrWebhookSignature},
		{"no headers at all", specSecret, http.Header{}, specBody, specAt, ErrWebhookSignature},

		// Versions: only v1 counts; a v2 beside a good v1 is no harm.
		{"only a v2 signature", specSecret, specHeader(v2), specBody, specAt, ErrWebhookSignature},
		{"a v2 signature then a v1", specSecret, specHeader(v2 + " " + specSig), specBody, specAt, nil},
		{"a v1 signature then a v2", specSecret, specHeader(specSig + " " + v2), specBody, specAt, nil},
		{"a v1 signature among junk", specSecret, specHeader("v1,AAAA v1, , v1a,x " + specSig), specBody, specAt, nil},

		// Header names in any case: net/http canonicalizes them, but a map
		// built by hand need not be.
		{"lower-case names in a map built by hand", specSecret,
			http.Header{"webhook-id": {specID}, "webhook-timestamp": {specStamp}, "webhook-signature": {specSig}}, specBody, specAt, nil},
		{"upper-case names in a map built by hand", specSecret,
			http.Header{"WEBHOOK-ID": {specID}, "WEBHOOK-TIMESTAMP": {specStamp}, "WEBHOOK-SIGNATURE": {specSig}}, specBody, specAt, nil},
		// Two signature fields, or one joined by a proxy with ", ".
		{"two webhook-signature fields", specSecret, withHeader(func(h http.Header) { h["Webhook-Signature"] = []string{otherOnly, specSig} }), specBody, specAt, nil},
		{"two signatures joined with a comma", specSecret, specHeader(otherOnly + ", " + specSig), specBody, specAt, nil},

		// The caller's errors: not a refusal of the request.
		{"a secret without whsec_", strings.TrimPrefix(specSecret, "whsec_"), specHeader(specSig), specBody, specAt, errSecret},
		{"a secret not base64", "whsec_not*base64", specHeader(specSig), specBody, specAt, errSecret},
		{"a secret without its padding", "whsec_c2Vjb25kLWtleS1vZi0zMi1ieXRlcy0tLS0tLS0tLS0", specHeader(specSig), specBody, specAt, errSecret},
		{"an empty key", "whsec_", specHeader(specSig), specBody, specAt, errSecret},
		{"no secret", " ", specHeader(specSig), specBody, specAt, errSecret},
		{"a good secret and a bad one", specSecret + " whsec_!!", specHeader(specSig), specBody, specAt, errSecret},
		// A bad secret is said even when the request is bad too.
		{"a bad secret and no headers", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", http.Header{}, specBody, specAt, errSecret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifyWebhookAt(tt.secret, tt.header, []byte(tt.body), tt.now, WebhookTolerance)
			switch tt.want {
			case nil:
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			case ErrWebhookSignature:
				if !errors.Is(err, ErrWebhookSignature) {
					t.Fatalf("got %v, want a refusal (ErrWebhookSignature)", err)
				}
			case errSecret:
				if err == nil || errors.Is(err, ErrWebhookSignature) || !strings.Contains(err.Error(), "secret") {
					t.Fatalf("got %v, want an error about the secret, not ErrWebhookSignature", err)
				}
			}
		})
	}
}

// The tolerance is a parameter: 0 takes only the very second; a negative
// one is the caller's error.
func TestVerifyWebhookTolerance(t *testing.T) {
	h := specHeader(specSig)
	if err := VerifyWebhookAt(specSecret, h, []byte(specBody), specAt, 0); err != nil {
		t.Fatalf("tolerance 0 at the very second: %v", err)
	}
	if err := VerifyWebhookAt(specSecret, h, []byte(specBody), specAt.Add(time.Second), 0); !errors.Is(err, ErrWebhookSignature) {
		t.Fatalf("tolerance 0 a second late: %v", err)
	}
	if err := VerifyWebhookAt(specSecret, h, []byte(specBody), specAt.Add(time.Hour), 2*time.Hour); err != nil {
		t.Fatalf("an hour old under a tolerance of two: %v", err)
	}
	if err := VerifyWebhookAt(specSecret, h, []byte(specBody), specAt, -time.Second); err == nil || errors.Is(err, ErrWebhookSignature) {
		t.Fatalf("a negative tolerance: %v, want the caller's error", err)
	}
}

// VerifyWebhook is now: a request signed now passes, the spec's (from 2021)
// is long expired.
func TestVerifyWebhookNow(t *testing.T) {
	body := []byte(`{"id":"order-7","topic":"orders","body":{"n":1}}`)
	now := time.Now()
	h := http.Header{}
	h.Set("Webhook-Id", "order-7")
	h.Set("Webhook-Timestamp", strconv.FormatInt(now.Unix(), 10))
	h.Set("Webhook-Signature", sign(t, otherSecret, "order-7", now, string(body)))
	if err := VerifyWebhook(otherSecret, h, body); err != nil {
		t.Fatalf("signed now: %v", err)
	}
	err := VerifyWebhook(specSecret, specHeader(specSig), []byte(specBody))
	if !errors.Is(err, ErrWebhookSignature) || !strings.Contains(err.Error(), "tolerance") {
		t.Fatalf("the spec's vector today: %v, want a refusal for its timestamp", err)
	}
}

// The README's receiver (the block after "<!-- receiver -->") builds and
// vets, in a module of its own that requires this one: it is copied as it
// is, so it must compile as it is.
func TestReadmeReceiverBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- receiver -->\\s*```go receiver\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no receiver block (<!-- receiver --> then ```go receiver)")
	}
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mod := "module receiver\n\ngo 1.26\n\nrequire github.com/gmq/gmq/client v0.0.0\n\nreplace github.com/gmq/gmq/client => " + here + "\n"
	for name, text := range map[string][]byte{"go.mod": []byte(mod), "main.go": m[1]} {
		if err := os.WriteFile(filepath.Join(dir, name), text, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "vet", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go vet of the README's receiver: %v\n%s", err, out)
	}
}
