package client

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// HTTP push delivery (gmq's docs/workflows.md, "HTTP push delivery"): a
// topic with deliver_to POSTs each of its jobs to that URL, the body the
// job as JSON, signed with the topic's deliver_secret in the Standard
// Webhooks form (https://www.standardwebhooks.com):
//
//	webhook-id:        the job's number (never reused; gmq-job-id has its id)
//	webhook-timestamp: Unix seconds, when the request was made
//	webhook-signature: "v1,<base64 of HMAC-SHA256(key, id.timestamp.body)>"
//	                   (two, space-separated, while the secret is rotated)
//
// A receiver checks the signature before it trusts the body: anyone who can
// reach the URL could otherwise make it do a job. The timestamp is signed
// too, so a recorded request is refused once it is older than the
// tolerance: a replay has a short window, and an attacker cannot move the
// timestamp without the key.

// ErrWebhookSignature is what every refused delivery wraps (errors.Is): a
// header missing, a timestamp that is not a whole number or is too far from
// now, no signature that matches. A receiver answers such a request with a
// 4xx and does no work. A secret that is not one (no "whsec_", bad base64)
// is not this error: the receiver is set up wrong, not the request.
var ErrWebhookSignature = errors.New("gmq: webhook refused")

// WebhookTolerance is how far a delivery's timestamp may be from now, before
// or after, for VerifyWebhook: 5 minutes, as Standard Webhooks advises. It
// bounds a replay's window; clocks a little apart still agree.
const WebhookTolerance = 5 * time.Minute

// webhookSecretPrefix starts every secret: "whsec_" then the standard
// base64 of the key bytes.
const webhookSecretPrefix = "whsec_"

// VerifyWebhook checks a delivery's signature, now, with WebhookTolerance:
// nil when one of header's v1 signatures is body's under one of secret's
// keys. secret is the topic's deliver_secret, or two of them,
// space-separated, while it is rotated (the old and the new: a delivery
// signed with either passes). header is the request's (r.Header); body is
// the raw bytes read from the request, before any JSON decoding (the
// signature is over the bytes as sent). A refusal wraps
// ErrWebhookSignature; a secret that is not one is a plain error.
func VerifyWebhook(secret string, header http.Header, body []byte) error {
	return VerifyWebhookAt(secret, header, body, time.Now(), WebhookTolerance)
}

// VerifyWebhookAt is VerifyWebhook at a given now, with a given tolerance
// (how far the timestamp may be from now, either way; the bound itself
// passes). For tests, and for a receiver that wants a tolerance of its own.
// Header names are matched in any case, even in a header map built by hand
// without http.CanonicalHeaderKey. Signatures of versions other than v1 are
// ignored, as Standard Webhooks says (a later scheme beside v1).
func VerifyWebhookAt(secret string, header http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	keys, err := webhookKeys(secret)
	if err != nil {
		return err
	}
	if tolerance < 0 {
		return fmt.Errorf("gmq: a webhook's tolerance is a duration of 0 or more, not %s", tolerance)
	}
	id, ok := headerValue(header, "webhook-id")
	if !ok {
		return fmt.Errorf("%w: no webhook-id header", ErrWebhookSignature)
	}
	stamp, ok := headerValue(header, "webhook-timestamp")
	if !ok {
		return fmt.Errorf("%w: no webhook-timestamp header", ErrWebhookSignature)
	}
	sigs, ok := headerValue(header, "webhook-signature")
	if !ok {
		return fmt.Errorf("%w: no webhook-signature header", ErrWebhookSignature)
	}
	at, err := webhookTimestamp(stamp)
	if err != nil {
		return err
	}
	// Both ways: a timestamp in the future is as suspect as an old one (it
	// would stretch a replay's window past the tolerance).
	if d := now.Sub(time.Unix(at, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: its timestamp %d is %s from now, past the tolerance of %s", ErrWebhookSignature, at, d.Round(time.Second), tolerance)
	}
	var want []string
	for _, key := range keys {
		want = append(want, webhookSignature(key, id, stamp, body))
	}
	// Every pair is compared, in constant time each: how long it takes says
	// nothing of how much of a signature was right.
	matched := false
	for _, field := range strings.Fields(sigs) {
		// A signature header sent twice may come joined with ", " by a proxy.
		version, sig, ok := strings.Cut(strings.TrimSuffix(field, ","), ",")
		if !ok || version != "v1" {
			continue
		}
		for _, w := range want {
			if hmac.Equal([]byte(sig), []byte(w)) {
				matched = true
			}
		}
	}
	if !matched {
		return fmt.Errorf("%w: no v1 signature matches the secret", ErrWebhookSignature)
	}
	return nil
}

// SignWebhook is the webhook-signature header gmq sends for a delivery of
// body with id at the time at: "v1,<signature>" for each of secret's keys,
// space-separated. It is for tests of a receiver: sign a request as the
// broker would (with webhook-id id and webhook-timestamp at.Unix()), and
// check that the receiver takes it, and refuses it changed.
func SignWebhook(secret, id string, at time.Time, body []byte) (string, error) {
	keys, err := webhookKeys(secret)
	if err != nil {
		return "", err
	}
	stamp := strconv.FormatInt(at.Unix(), 10)
	sigs := make([]string, len(keys))
	for i, key := range keys {
		sigs[i] = "v1," + webhookSignature(key, id, stamp, body)
	}
	return strings.Join(sigs, " "), nil
}

// webhookKeys decodes secret's keys: one, or several space-separated. The
// key is the decoded bytes after "whsec_", never the text.
func webhookKeys(secret string) ([][]byte, error) {
	var keys [][]byte
	for i, s := range strings.Fields(secret) {
		encoded, ok := strings.CutPrefix(s, webhookSecretPrefix)
		if !ok {
			return nil, fmt.Errorf("gmq: webhook secret %d does not start with %q: give the topic's deliver_secret as it is, %s followed by base64", i+1, webhookSecretPrefix, webhookSecretPrefix)
		}
		key, err := base64.StdEncoding.DecodeString(encoded)
		if err != nil || len(key) == 0 {
			return nil, fmt.Errorf("gmq: webhook secret %d is not %s followed by the standard base64 (with padding) of its key", i+1, webhookSecretPrefix)
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return nil, errors.New("gmq: no webhook secret: give the topic's deliver_secret (whsec_...), or two space-separated while rotating")
	}
	return keys, nil
}

// webhookTimestamp reads webhook-timestamp: decimal digits only (no sign,
// no fraction, no spaces), as gmq sends them.
func webhookTimestamp(stamp string) (int64, error) {
	if stamp == "" || strings.Trim(stamp, "0123456789") != "" {
		return 0, fmt.Errorf("%w: webhook-timestamp %q is not a whole number of seconds", ErrWebhookSignature, stamp)
	}
	at, err := strconv.ParseInt(stamp, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: webhook-timestamp %q is out of range", ErrWebhookSignature, stamp)
	}
	return at, nil
}

// webhookSignature is the base64 of HMAC-SHA256 over "id.timestamp.body",
// with the timestamp as it was sent.
func webhookSignature(key []byte, id, stamp string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + stamp + "."))
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// headerValue is header's field name, in any case: every value of it,
// space-separated (a signature may come in more than one field). ok is
// false when there is none, or only empty ones.
func headerValue(header http.Header, name string) (string, bool) {
	values := header.Values(name)
	if len(values) == 0 {
		for k, v := range header {
			if strings.EqualFold(k, name) {
				values = append(values, v...)
			}
		}
	}
	v := strings.TrimSpace(strings.Join(values, " "))
	return v, v != ""
}
