package pool

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/lua"
)

// function is a topic-scoped script, called as a function of gmq's library
// of Redis Functions (lua.Library): FCALL, or FCALL_RO for one that only
// reads. Exec is rueidis.Lua's, so a call site reads as a script's.
type function struct {
	script   string // the script's name (touch): its arguments' row (lua.ScriptArgs)
	name     string // in the library: lua.Library.Function of the script's
	readOnly bool
}

func newFunction(script string) *function {
	return &function{script: script, name: lua.TheLibrary().Function(script), readOnly: lua.ReadOnly(script)}
}

// args is a call's ARGV: the caller (pool's, lib.lua begin), then the
// script's arguments, given by name (lua.Args), for the script itself or
// a mode of it ("set": schedule set).
func (f *function) args(caller, mode string, named ...string) []string {
	row := f.script
	if mode != "" {
		row += " " + mode
	}
	return lua.AppendArgs(append(make([]string, 0, len(named)/2+2), caller), row, named...)
}

// Exec calls the function with keys and args. A Redis that does not have
// the library (restarted without persistence, flushed, a cluster node added
// since) is given it, and the call made again; if that node still lacks
// it, the error says why it was not loaded.
func (f *function) Exec(ctx context.Context, c rueidis.Client, keys, args []string) rueidis.RedisResult {
	res := c.Do(ctx, f.command(c, keys, args))
	if !missingFunction(res.Error()) {
		return res
	}
	_, loadErr := loadLibrary(ctx, c)
	res = c.Do(ctx, f.command(c, keys, args))
	if loadErr != nil && missingFunction(res.Error()) {
		return rueidis.NewErrorResult(fmt.Errorf("%w (%w)", res.Error(), loadErr))
	}
	return res
}

func (f *function) command(c rueidis.Client, keys, args []string) rueidis.Completed {
	if f.readOnly {
		return c.B().FcallRo().Function(f.name).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	}
	return c.B().Fcall().Function(f.name).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

// missingFunction says whether err is Redis's answer to a call of a
// function it does not have.
func missingFunction(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	return ok && strings.Contains(re.Error(), "Function not found")
}

// loadLibrary loads gmq's library into every node the client knows: every
// master of a cluster (a replica gets it from its master and refuses a
// load), or the one Redis. A node that has it already says so, which is
// fine. It returns how many nodes have it, and why each other one (a
// replica aside) does not.
func loadLibrary(ctx context.Context, c rueidis.Client) (loaded int, err error) {
	code := lua.TheLibrary().Code
	var errs []error
	for addr, node := range c.Nodes() {
		err := node.Do(ctx, node.B().FunctionLoad().FunctionCode(code).Build()).Error()
		re, isRedis := rueidis.IsRedisErr(err)
		switch {
		case err == nil || (isRedis && strings.Contains(re.Error(), "already exists")):
			loaded++
		case isRedis && strings.HasPrefix(re.Error(), "READONLY"):
		default:
			errs = append(errs, wrapRedis("load gmq's functions into "+addr, err))
		}
	}
	return loaded, errors.Join(errs...)
}
