package beanstalk

import (
	"strings"

	"github.com/gmq/gmq/job"
)

// op is a protocol command.
type op int

const (
	opUnknown op = iota
	opPut
	opPeekJob
	opPeekReady
	opPeekDelayed
	opPeekBuried
	opReserveTimeout
	opReserveJob
	opReserve
	opDelete
	opRelease
	opBury
	opKick
	opKickJob
	opTouch
	opStatsJob
	opStatsTube
	opStats
	opUse
	opWatch
	opIgnore
	opListTubesWatched
	opListTubeUsed
	opListTubes
	opQuit
	opPauseTube
)

// verbs lists the command words in the order beanstalkd 1.12 tries them, as
// prefixes of the line: the order decides which command a line like
// "reserve-with-timeout" (no space, so plain "reserve") or "statsx" is.
var verbs = []struct {
	prefix string
	op     op
	stat   string // the cmd-* counter it counts in
}{
	{"put ", opPut, "cmd-put"},
	{"peek ", opPeekJob, "cmd-peek"},
	{"peek-ready", opPeekReady, "cmd-peek-ready"},
	{"peek-delayed", opPeekDelayed, "cmd-peek-delayed"},
	{"peek-buried", opPeekBuried, "cmd-peek-buried"},
	{"reserve-with-timeout ", opReserveTimeout, "cmd-reserve-with-timeout"},
	{"reserve-job ", opReserveJob, "cmd-reserve-job"},
	{"reserve", opReserve, "cmd-reserve"},
	{"delete ", opDelete, "cmd-delete"},
	{"release ", opRelease, "cmd-release"},
	{"bury ", opBury, "cmd-bury"},
	{"kick ", opKick, "cmd-kick"},
	{"kick-job ", opKickJob, "cmd-kick"},
	{"touch ", opTouch, "cmd-touch"},
	{"stats-job ", opStatsJob, "cmd-stats-job"},
	{"stats-tube ", opStatsTube, "cmd-stats-tube"},
	{"stats", opStats, "cmd-stats"},
	{"use ", opUse, "cmd-use"},
	{"watch ", opWatch, "cmd-watch"},
	{"ignore ", opIgnore, "cmd-ignore"},
	{"list-tubes-watched", opListTubesWatched, "cmd-list-tubes-watched"},
	{"list-tube-used", opListTubeUsed, "cmd-list-tube-used"},
	{"list-tubes", opListTubes, "cmd-list-tubes"},
	{"quit", opQuit, ""},
	{"pause-tube", opPauseTube, "cmd-pause-tube"},
}

// command is one parsed command line.
type command struct {
	op    op
	stat  string
	id    uint64
	pri   uint32
	delay uint32 // seconds
	ttr   uint32 // seconds
	bytes uint32 // put: body size
	n     int64  // kick bound; reserve-with-timeout seconds (negative: forever)
	tube  string
}

// Replies that are whole lines.
const (
	msgBadFormat      = "BAD_FORMAT\r\n"
	msgUnknownCommand = "UNKNOWN_COMMAND\r\n"
	msgExpectedCRLF   = "EXPECTED_CRLF\r\n"
	msgJobTooBig      = "JOB_TOO_BIG\r\n"
	msgDraining       = "DRAINING\r\n"
	msgNotFound       = "NOT_FOUND\r\n"
	msgInternalError  = "INTERNAL_ERROR\r\n"
	msgOutOfMemory    = "OUT_OF_MEMORY\r\n"
	msgDeadlineSoon   = "DEADLINE_SOON\r\n"
	msgTimedOut       = "TIMED_OUT\r\n"
	msgNotIgnored     = "NOT_IGNORED\r\n"
)

// parse reads a command line (without its CRLF). On a malformed line it
// returns the error reply to send. A put whose size is over the limit parses;
// the caller checks the size before the trailing text, as beanstalkd does.
func parse(line string) (command, string) {
	if strings.IndexByte(line, 0) >= 0 {
		return command{}, msgBadFormat
	}
	for _, v := range verbs {
		if strings.HasPrefix(line, v.prefix) {
			c := command{op: v.op, stat: v.stat}
			return c, c.parseArgs(line, line[len(v.prefix):])
		}
	}
	return command{}, msgUnknownCommand
}

func (c *command) parseArgs(line, rest string) string {
	var ok bool
	switch c.op {
	case opPut:
		var tail string
		if c.pri, rest, ok = u32(rest); !ok {
			return msgBadFormat
		}
		if c.delay, rest, ok = u32(rest); !ok {
			return msgBadFormat
		}
		if c.ttr, rest, ok = u32(rest); !ok {
			return msgBadFormat
		}
		if c.bytes, tail, ok = u32(rest); !ok {
			return msgBadFormat
		}
		c.tube = tail // trailing text: checked after the size (see conn.put)
		return ""
	case opPeekReady, opPeekDelayed, opPeekBuried, opReserve, opStats,
		opListTubes, opListTubeUsed, opListTubesWatched:
		if rest != "" { // beanstalkd compares the whole line's length
			return msgBadFormat
		}
		return ""
	case opPeekJob, opReserveJob, opDelete, opKickJob, opTouch, opStatsJob:
		if c.id, ok = u64All(rest); !ok {
			return msgBadFormat
		}
		return ""
	case opReserveTimeout:
		if c.n, ok = strtol(rest); !ok {
			return msgBadFormat
		}
		return ""
	case opRelease:
		if c.id, rest, ok = u64(rest); !ok {
			return msgBadFormat
		}
		if c.pri, rest, ok = u32(rest); !ok {
			return msgBadFormat
		}
		if c.delay, ok = u32All(rest); !ok {
			return msgBadFormat
		}
		return ""
	case opBury:
		if c.id, rest, ok = u64(rest); !ok {
			return msgBadFormat
		}
		if c.pri, ok = u32All(rest); !ok {
			return msgBadFormat
		}
		return ""
	case opKick:
		if c.n, ok = strtoul(rest); !ok {
			return msgBadFormat
		}
		return ""
	case opStatsTube, opUse, opWatch, opIgnore:
		if !validTube(rest) {
			return msgBadFormat
		}
		c.tube = rest
		return ""
	case opPauseTube:
		name, after := tubeName(rest)
		if name == "" {
			return msgBadFormat
		}
		if c.delay, ok = u32All(after); !ok || !validTube(name) {
			return msgBadFormat
		}
		c.tube = name
		return ""
	}
	return "" // quit
}

// validTube applies beanstalkd's name rule, which is gmq's topic rule, to a
// whole string.
func validTube(name string) bool { return job.ValidateTopic(name) == nil }

// tubeName skips spaces and takes the longest run of name characters.
func tubeName(s string) (name, rest string) {
	s = strings.TrimLeft(s, " ")
	i := 0
	for i < len(s) && job.IsTopicByte(s[i]) {
		i++
	}
	return s[:i], s[i:]
}

// digits reads beanstalkd's unsigned numbers: spaces, then at least one digit
// (no sign), up to limit.
func digits(s string, limit uint64) (uint64, string, bool) {
	s = strings.TrimLeft(s, " ")
	i := 0
	var n uint64
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		d := uint64(s[i] - '0')
		if n > (limit-d)/10 {
			return 0, s, false
		}
		n = n*10 + d
		i++
	}
	if i == 0 {
		return 0, s, false
	}
	return n, s[i:], true
}

func u32(s string) (uint32, string, bool) {
	n, rest, ok := digits(s, 1<<32-1)
	return uint32(n), rest, ok
}

func u64(s string) (uint64, string, bool) { return digits(s, 1<<64-1) }

func u32All(s string) (uint32, bool) {
	n, rest, ok := u32(s)
	return n, ok && rest == ""
}

func u64All(s string) (uint64, bool) {
	n, rest, ok := u64(s)
	return n, ok && rest == ""
}

// cSpace is C's isspace.
func cSpace(b byte) bool { return b == ' ' || (b >= '\t' && b <= '\r') }

// strtol is C's strtol as beanstalkd uses it for reserve-with-timeout:
// leading white space, an optional sign, digits; trailing text is ignored, no
// digits read as 0, and only overflow is an error. The result is truncated to
// an int, as beanstalkd stores it.
func strtol(s string) (int64, bool) {
	neg, mag, ok := cNumber(s)
	if !ok {
		return 0, false
	}
	if (!neg && mag > 1<<63-1) || (neg && mag > 1<<63) {
		return 0, false
	}
	v := int64(mag)
	if neg {
		v = -v
	}
	return int64(int32(v)), true
}

// strtoul is C's strtoul as beanstalkd's kick uses it: like strtol, but a
// line with no digits is an error and a negative number wraps around; the
// count is an unsigned int.
func strtoul(s string) (int64, bool) {
	neg, mag, ok := cNumber(s)
	if !ok || !hasDigit(s) {
		return 0, false
	}
	if neg {
		mag = -mag
	}
	return int64(uint32(mag)), true
}

func hasDigit(s string) bool {
	i := 0
	for i < len(s) && cSpace(s[i]) {
		i++
	}
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	return i < len(s) && s[i] >= '0' && s[i] <= '9'
}

// cNumber reads white space, a sign and digits; false on 64-bit overflow.
func cNumber(s string) (neg bool, mag uint64, ok bool) {
	i := 0
	for i < len(s) && cSpace(s[i]) {
		i++
	}
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		d := uint64(s[i] - '0')
		if mag > (1<<64-1-d)/10 {
			return neg, 0, false
		}
		mag = mag*10 + d
	}
	return neg, mag, true
}
