package config

// The setters of conf.ini's values (Config.settings): each reads one value
// into its field, within its bounds.

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

func boolTo(dst *bool) func(*Config, string) error {
	return func(_ *Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return errors.New("want true or false")
		}
		*dst = b
		return nil
	}
}

func intTo(dst *int, lo, hi int) func(*Config, string) error {
	return func(_ *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("want a whole number from %d to %d", lo, hi)
		}
		*dst = n
		return nil
	}
}

// durationTo accepts Go durations ("1.5s", "250ms") or plain seconds ("30").
func durationTo(dst *time.Duration, lo, hi time.Duration) func(*Config, string) error {
	return func(_ *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			secs, ferr := strconv.ParseFloat(v, 64)
			if ferr != nil {
				return errors.New(`want a duration such as "30s" or "250ms", or seconds`)
			}
			if !(secs >= lo.Seconds() && secs <= hi.Seconds()) { // NaN, ±Inf and 1e300 too, before they overflow
				return fmt.Errorf("want a duration from %v to %v", lo, hi)
			}
			d = time.Duration(secs * float64(time.Second))
		}
		if d < lo || d > hi {
			return fmt.Errorf("want a duration from %v to %v", lo, hi)
		}
		*dst = d
		return nil
	}
}

// stringTo sets a text setting as given.
func stringTo(dst *string) func(*Config, string) error {
	return func(_ *Config, v string) error { *dst = v; return nil }
}

// optionalAddrTo sets a front end's listen address: host:port, or "" for off.
func optionalAddrTo(dst *string) func(*Config, string) error {
	return func(_ *Config, v string) error {
		*dst = v
		if v == "" {
			return nil
		}
		return checkAddr(v)
	}
}

func checkAddr(v string) error {
	if _, _, err := net.SplitHostPort(v); err != nil {
		return errors.New(`want host:port, e.g. "127.0.0.1:8000"`)
	}
	return nil
}

func checkRedisURL(v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "unix") {
		return errors.New(`want a redis:// (or rediss://, unix://) URL, e.g. "redis://127.0.0.1:6379/0"`)
	}
	return nil
}

func checkPrefix(v string) error {
	if v == "" || strings.ContainsAny(v, "{} \t") {
		return errors.New("want a non-empty prefix without braces or spaces")
	}
	return nil
}
