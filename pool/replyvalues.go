package pool

import (
	"strconv"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/lua"
)

// The readers the generated decoders (replies_gen.go, from lua.ReplyShapes)
// share: one value of a reply, or a list that takes the rest. An absent
// value, or one of another type, reads as its zero (a Lua false is a nil),
// as the scripts define. With the decoders, they are the only code that
// reads a reply by position (TestNoReplyReadByPosition).

// jobReplyLen is how many values a job reply takes.
const jobReplyLen = lua.ReplyLen

// jobValues is a job reply (lua.ReplyLen values; parseJob reads it).
type jobValues struct {
	Member  string
	Body    string
	HasBody bool // false: the record holds the body, or the reply carries none
	Now     int64
	Record  string
	Whole   bool // the reply had all lua.ReplyLen values
}

func replyStr(a []rueidis.RedisMessage, i int) string {
	if i >= len(a) {
		return ""
	}
	if s, err := a[i].ToString(); err == nil {
		return s
	}
	if n, err := a[i].AsInt64(); err == nil { // a Lua number where text is read
		return strconv.FormatInt(n, 10)
	}
	return ""
}

func replyInt(a []rueidis.RedisMessage, i int) int64 {
	if i >= len(a) {
		return 0
	}
	n, _ := a[i].AsInt64()
	return n
}

func replyBool(a []rueidis.RedisMessage, i int) bool {
	return replyInt(a, i) == 1
}

func replyJob(a []rueidis.RedisMessage, i int) jobValues {
	if i+jobReplyLen > len(a) {
		return jobValues{}
	}
	body, err := a[i+1].ToString()
	return jobValues{Member: replyStr(a, i), Body: body, HasBody: err == nil, Now: replyInt(a, i+2),
		Record: replyStr(a, i+3), Whole: true}
}

func replyRaw(a []rueidis.RedisMessage, i int) []rueidis.RedisMessage {
	if i >= len(a) {
		return nil
	}
	list, _ := a[i].ToArray()
	return list
}

func replyStrs(a []rueidis.RedisMessage, i int) []string {
	return restStrs(replyRaw(a, i), 0)
}

func replyInts(a []rueidis.RedisMessage, i int) []int64 {
	return restInts(replyRaw(a, i), 0)
}

func replyPairs(a []rueidis.RedisMessage, i int) [][2]string {
	return restPairs(replyRaw(a, i), 0)
}

func restRaw(a []rueidis.RedisMessage, i int) []rueidis.RedisMessage {
	if i >= len(a) {
		return nil
	}
	return a[i:]
}

func restStrs(a []rueidis.RedisMessage, i int) []string {
	var out []string
	if n := restLen(a, i, 1); n > 0 {
		out = make([]string, 0, n)
	}
	for ; i < len(a); i++ {
		out = append(out, replyStr(a, i))
	}
	return out
}

func restInts(a []rueidis.RedisMessage, i int) []int64 {
	var out []int64
	if n := restLen(a, i, 1); n > 0 {
		out = make([]int64, 0, n)
	}
	for ; i < len(a); i++ {
		out = append(out, replyInt(a, i))
	}
	return out
}

func restPairs(a []rueidis.RedisMessage, i int) [][2]string {
	var out [][2]string
	if n := restLen(a, i, 2); n > 0 {
		out = make([][2]string, 0, n)
	}
	for ; i+1 < len(a); i += 2 {
		out = append(out, [2]string{replyStr(a, i), replyStr(a, i+1)})
	}
	return out
}

func replyTriples(a []rueidis.RedisMessage, i int) [][3]string {
	return restTriples(replyRaw(a, i), 0)
}

func restTriples(a []rueidis.RedisMessage, i int) [][3]string {
	var out [][3]string
	if n := restLen(a, i, 3); n > 0 {
		out = make([][3]string, 0, n)
	}
	for ; i+2 < len(a); i += 3 {
		out = append(out, [3]string{replyStr(a, i), replyStr(a, i+1), replyStr(a, i+2)})
	}
	return out
}

func restArrays(a []rueidis.RedisMessage, i int) [][]rueidis.RedisMessage {
	var out [][]rueidis.RedisMessage
	if n := restLen(a, i, 1); n > 0 {
		out = make([][]rueidis.RedisMessage, 0, n)
	}
	for ; i < len(a); i++ {
		out = append(out, replyRaw(a, i))
	}
	return out
}

func restRows[T any](a []rueidis.RedisMessage, i, width int, decode func([]rueidis.RedisMessage) T) []T {
	var out []T
	if n := restLen(a, i, width); n > 0 {
		out = make([]T, 0, n)
	}
	for ; i+width <= len(a); i += width {
		out = append(out, decode(a[i:i+width]))
	}
	return out
}

func restJobs(a []rueidis.RedisMessage, i int) []jobValues {
	var out []jobValues
	if n := restLen(a, i, jobReplyLen); n > 0 {
		out = make([]jobValues, 0, n)
	}
	for ; i+jobReplyLen <= len(a); i += jobReplyLen {
		out = append(out, replyJob(a, i))
	}
	return out
}

// restLen is how many whole groups of width values a list from a[i]
// holds: each list is made at its size once, not grown (a batch's
// replies and a call's totals are read at every script call), and an
// empty one stays nil, as before.
func restLen(a []rueidis.RedisMessage, i, width int) int {
	if i >= len(a) {
		return 0
	}
	return (len(a) - i) / width
}
