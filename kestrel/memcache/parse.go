package memcache

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gmq/gmq/job"
)

// getOptions are a get's queue name and the options after it:
// <queue>[/t=<ms>][/open][/close][/abort][/peek], in any order.
type getOptions struct {
	queue                    string
	timeout                  time.Duration
	open, close, abort, peek bool
}

// maxWait bounds a get's wait: a longer /t= waits this long.
const maxWait = 24 * time.Hour

// maxTimeout is the largest /t= taken, kestrel's own (its timeout is a
// 32-bit count of milliseconds): a larger one is a client's mistake, not a
// wait to cut, and it would overflow a Duration on the way (/t=9223372036855
// became a negative wait that failed as if Redis were down).
const maxTimeout = math.MaxInt32

// parseGet reads a get's key. Kestrel's rules: peek or abort with open or
// close, and peek with abort, are contradictions; an empty name is an error.
// Unlike kestrel, which ignores them, an unknown option is an error too: a
// misspelt "/opn" would otherwise turn a reliable read into a plain one.
func parseGet(key string) (getOptions, error) {
	parts := strings.Split(key, "/")
	o := getOptions{queue: parts[0]}
	for _, opt := range parts[1:] {
		switch {
		case strings.HasPrefix(opt, "t="):
			ms, err := strconv.ParseInt(opt[2:], 10, 64)
			if err != nil && !errors.Is(err, strconv.ErrRange) || ms < 0 {
				return o, fmt.Errorf("bad timeout %q: want /t=<milliseconds>", opt)
			}
			if err != nil || ms > maxTimeout {
				return o, fmt.Errorf("bad timeout %q: at most %d milliseconds", opt, maxTimeout)
			}
			o.timeout = min(time.Duration(ms)*time.Millisecond, maxWait)
		case opt == "open":
			o.open = true
		case opt == "close":
			o.close = true
		case opt == "abort":
			o.abort = true
		case opt == "peek":
			o.peek = true
		default:
			return o, fmt.Errorf("unknown option %q: gmq knows t=, open, close, abort and peek", opt)
		}
	}
	switch {
	case o.queue == "":
		return o, errors.New("no queue name")
	case (o.peek || o.abort) && (o.open || o.close), o.peek && o.abort:
		return o, errors.New("peek and abort cannot be combined with open, close or each other")
	}
	return o, checkQueue(o.queue)
}

// setArgs are a set's numbers.
type setArgs struct {
	queue string
	flags uint32 // kept by memcache; kestrel ignores them, and so does gmq
	exp   int64
}

func parseSet(args []string) (setArgs, error) {
	s := setArgs{queue: args[0]}
	flags, err := strconv.ParseUint(args[1], 10, 32)
	if err != nil {
		return s, fmt.Errorf("bad flags %q: want a whole number", args[1])
	}
	s.flags = uint32(flags)
	if s.exp, err = strconv.ParseInt(args[2], 10, 32); err != nil {
		return s, fmt.Errorf("bad exptime %q: want a whole number of seconds (32 bits, as kestrel)", args[2])
	}
	return s, checkQueue(s.queue)
}

// relativeExpiry is memcache's bound: a smaller expiration time is seconds
// from now, a larger one a Unix time.
const relativeExpiry = 1_000_000

// expiry turns a set's expiration time into when the item expires, as
// kestrel does: 0 is never (the zero time), under a million seconds from
// now, else a Unix time in seconds. A negative one is relative, in the past:
// the item expires at once (memcache's rule too).
func expiry(exp int64, now time.Time) time.Time {
	switch {
	case exp == 0:
		return time.Time{}
	case exp < relativeExpiry:
		return now.Add(time.Duration(exp) * time.Second)
	default:
		return time.Unix(exp, 0)
	}
}

// checkQueue applies gmq's topic rules, which forbid '~' as kestrel does,
// and more (spaces, control bytes, over 200 bytes), and kestrel's '/'.
func checkQueue(name string) error {
	if strings.Contains(name, "/") {
		// gmq's topics may hold '/', but a get reads what follows one as its
		// options: a queue set here could never be read here.
		return fmt.Errorf("%w: queue name %q holds '/', which starts a get's options (kestrel's rule)", job.ErrInvalid, name)
	}
	return job.ValidateTopic(name)
}
