package job

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// HTTP push delivery (docs/workflows.md, "HTTP push delivery"): a topic
// with deliver_to has its jobs POSTed to that URL by the brokers, each
// signed with deliver_secret in the Standard Webhooks form, the request cut
// at deliver_timeout. These are the settings' rules; package webhook does
// the delivering.
const (
	// DeliverTo is the URL a topic's jobs are POSTed to.
	DeliverTo = "deliver_to"
	// DeliverTimeout is how long one delivery's request may take, seconds.
	DeliverTimeout = "deliver_timeout"
	// DeliverSecret is the signing secret: one, or two while rotating.
	DeliverSecret = "deliver_secret"
)

// DefaultDeliverTimeout is deliver_timeout when unset.
const DefaultDeliverTimeout = 10 * time.Second

// MaxDeliverTimeout bounds deliver_timeout: a delivery holds a request (and a
// reserved job) that long, on every broker.
const MaxDeliverTimeout = 15 * time.Minute

// MaxDeliverURL bounds deliver_to's length.
const MaxDeliverURL = 2048

// SecretPrefix starts a signing secret: "whsec_" and the key's base64
// (Standard Webhooks).
const SecretPrefix = "whsec_"

// Masked is what a secret setting shows as wherever settings are shown,
// as the Redis password does.
const Masked = "***"

// deliverTo is an absolute http or https URL with a host, and no user
// info (credentials would show wherever settings show: sign with
// deliver_secret instead) or fragment. Whether its host may be called is
// conf.ini's [webhook] allow_hosts, checked where the setting is made.
func deliverTo(v string) (string, error) {
	if len(v) > MaxDeliverURL {
		return "", fmt.Errorf("want a URL of at most %d bytes", MaxDeliverURL)
	}
	u, err := url.Parse(v)
	switch {
	case err != nil:
		return "", fmt.Errorf("want an http or https URL: %v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("want an http or https URL, not %q", u.Scheme)
	case u.Hostname() == "":
		return "", fmt.Errorf("want a URL with a host")
	case u.User != nil:
		return "", fmt.Errorf("want a URL without user info: sign the requests with deliver_secret instead")
	case u.Fragment != "" || strings.Contains(v, "#"):
		return "", fmt.Errorf("want a URL without a fragment")
	}
	return u.String(), nil
}

// deliverTimeout is whole seconds from 1 to MaxDeliverTimeout.
func deliverTimeout(v string) (string, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || n > int64(MaxDeliverTimeout/time.Second) {
		return "", fmt.Errorf("want a whole number of seconds from 1 to %d", int64(MaxDeliverTimeout/time.Second))
	}
	return strconv.FormatInt(n, 10), nil
}

// deliverSecret is one signing secret, or two separated by a space while
// one replaces the other (every delivery is signed with each).
func deliverSecret(v string) (string, error) {
	secrets := strings.Fields(v)
	if len(secrets) < 1 || len(secrets) > 2 {
		return "", fmt.Errorf("want one secret %s<base64 of 16 to 64 bytes>, or two separated by a space while rotating", SecretPrefix)
	}
	for _, s := range secrets {
		if _, err := SigningKey(s); err != nil {
			return "", err
		}
	}
	return strings.Join(secrets, " "), nil
}

// SigningKey is a secret's key: the bytes its base64 encodes.
func SigningKey(secret string) ([]byte, error) {
	encoded, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("want a secret starting %s (Standard Webhooks), e.g. from: echo %s$(head -c 32 /dev/urandom | base64)", SecretPrefix, SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil || len(key) < 16 || len(key) > 64 {
		return nil, fmt.Errorf("want %s followed by the standard base64 of 16 to 64 bytes", SecretPrefix)
	}
	return key, nil
}

// Masked shows c with its secrets hidden: what every front end shows of a
// topic's settings.
func (c TopicConfig) Masked() TopicConfig {
	if _, ok := c[DeliverSecret]; !ok {
		return c
	}
	out := make(TopicConfig, len(c))
	for k, v := range c {
		out[k] = v
	}
	if out[DeliverSecret] != "" {
		out[DeliverSecret] = Masked
	}
	return out
}

// DeliveryTimeout is a topic's deliver_timeout (DefaultDeliverTimeout when
// unset).
func (c TopicConfig) DeliveryTimeout() time.Duration {
	n, err := strconv.ParseInt(c[DeliverTimeout], 10, 64)
	if err != nil || n < 1 {
		return DefaultDeliverTimeout
	}
	return time.Duration(n) * time.Second
}

// CheckDeliveryTimeout says why a topic's settings c cannot deliver with
// jobs whose TTR is defaultTTR ([jobs] default_ttr), or nil: its
// deliver_timeout must be under it, or a job would be delivered again
// while its first request is open. A topic without deliver_to has nothing
// to check. conf.ini's load and a run-time change both ask it.
func (c TopicConfig) CheckWebhookTimeout(defaultTTR time.Duration) error {
	if c[DeliverTo] == "" || defaultTTR <= 0 {
		return nil
	}
	if timeout := c.DeliveryTimeout(); defaultTTR <= timeout {
		return fmt.Errorf("%w: deliver_timeout %s is not under [jobs] default_ttr %s: a job's TTR must outlast its delivery's request, or it is delivered again while the first is open", ErrInvalid, timeout, defaultTTR)
	}
	return nil
}

// TopicOnly are the settings only a topic's own layer may hold: not
// [topics]'s defaults nor a pattern's, so that the brokers know which
// topics deliver by the topics' own marks (pool).
var TopicOnly = []string{DeliverTo, DeliverSecret}

// DeliveryStats count one broker's HTTP deliveries of a topic since it
// started: requests made (Sent), and how they ended; InFlight are open
// now; Time is all their times together (Time / Sent: the mean latency).
type WebhookStats struct {
	Sent, Acked, Released, Failed int64
	InFlight                      int
	Time                          time.Duration
	// LastError is the last failure's reason, at LastErrorAt.
	LastError   string
	LastErrorAt time.Time
}
