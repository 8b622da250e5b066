package lua

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Library is gmq's topic-scoped scripts as one library of Redis Functions
// (Redis 7): the Prelude (contract.lua, the lib files) is defined once, when the library is
// loaded, and each script is a function of it. A script run with EVALSHA
// defines them again on every call, which cost Redis more than the call
// itself (BenchmarkScriptCost in package pool: docs/PERFORMANCE.md).
//
// Its name carries a hash of its code, so brokers of different versions on
// one Redis each call their own; a Redis that lost it (a restart without
// persistence, a new cluster node) answers that a function is not found,
// and the pool loads it again.
type Library struct {
	Name string // gmq_ and the first 12 hex digits of the code's SHA-1
	Code string // what FUNCTION LOAD takes
}

// Function is the name a script is called by (FCALL) in the library.
func (l Library) Function(script string) string { return l.Name + "_" + script }

// FreeSuffix names a script's second function, flagged allow-oom (see
// functionFlags): batch_free runs a batch that pushes nothing.
const FreeSuffix = "_free"

// functionFlags are the flags a script's function is registered with
// (Redis refuses a call the flags do not allow before it runs):
//   - no-writes: it only reads (FCALL_RO, and it may run on a replica);
//   - allow-oom: it may run when Redis is at maxmemory. Every script but
//     batch frees memory or holds it level (an ack, a fail, a timer's
//     move), and must keep working then, as it does as a script, which
//     Redis refuses at maxmemory only at its first write that could grow
//     memory. batch is registered twice: without flags (a push at
//     maxmemory is refused, whole) and as batch_free, allow-oom, for a
//     batch without pushes (pool/batch.go picks).
var functionFlags = map[string][]string{
	"check": {"no-writes"}, "topic_stats": {"no-writes"}, "peek": {"no-writes"}, "job_list": {"no-writes"},
	"batch": nil,
	// An update may grow a body: at maxmemory it is refused whole, as a push
	// is, rather than let memory grow past the limit.
	"update_job": nil,
	// An ack's follow-ups grow memory: at maxmemory the ack is refused
	// whole (its job stays reserved), as a push is.
	"followups": nil,
	// A push, as batch's.
	"push_plain": nil,
}

// ReadOnly says whether a script's function only reads (call it with FCALL_RO).
func ReadOnly(script string) bool {
	f := functionFlags[script]
	return len(f) == 1 && f[0] == "no-writes"
}

// plainScripts are issue 50's plain path (push_plain.lua and the others
// named here; lib_plain.lua): called without run's begin and flush, whose
// per-call tables are most of a small call's Lua. Such a script keeps
// nothing of one call for the next: it reads only the library's constants
// and pure functions, and writes as it goes (TestPlainScriptsUseNoCallState).
var plainScripts = map[string]bool{"push_plain": true, "pop_plain": true, "pop_best_plain": true, "ack_plain": true, "ack_pop_plain": true}

// scriptFiles are the scripts written in several files, which are one
// script in this order (a file each for a phase of batch.lua's). A script
// not listed is its own file.
var scriptFiles = map[string][]string{
	"batch": {"batch.lua", "batch_push.lua", "batch_pop.lua", "batch_main.lua"},
}

// scriptOf is the script file is (a part of): "batch" for batch_pop.lua.
func scriptOf(file string) string {
	for script, parts := range scriptFiles {
		if slices.Contains(parts, file) {
			return script
		}
	}
	return strings.TrimSuffix(file, ".lua")
}

// scriptText is a topic-scoped script's code: its file, or its files
// joined (scriptFiles).
func scriptText(name string) string {
	parts, ok := scriptFiles[name]
	if !ok {
		return read(name + ".lua")
	}
	var b strings.Builder
	for i, f := range parts {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(read(f))
	}
	return b.String()
}

// Scripts lists the topic-scoped scripts, each a function of the library.
func Scripts() []string {
	names, err := fs.Glob(files, "*.lua")
	if err != nil {
		panic(err)
	}
	var out []string
	for _, n := range names {
		if name := scriptOf(n); !standalone[name] && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// TheLibrary is the library of this build, made once.
var TheLibrary = sync.OnceValue(func() Library {
	var b strings.Builder
	b.WriteString(Prelude())
	b.WriteString(`
-- run is every function: begin the call, run the script's body, flush
-- lib.lua's deferred writes, however the body returned. A call whose body
-- asked for its totals (deferred.totals) gets them after its replies, unless
-- it answers an error, which has no place for them: then they are written.
local function run(body, keys, args)
  begin(keys, args)
  local result = body()
  if deferred.totals and (type(result) ~= 'table' or result.err) then deferred.totals = false end
  flush()
  if deferred.totals and #deferred.totals > 1 then result[#result + 1] = deferred.totals end
  return result
end
`)
	// The scripts' bodies are fields of one table, not locals each: the
	// library's main function holds at most 200 locals, and the prelude
	// takes most of them.
	b.WriteString("\nlocal scripts = {}\n")
	type reg struct{ name, flags, call string }
	var regs []reg
	for _, name := range Scripts() {
		if defs, hoisted := hoist(scriptText(name)); hoisted {
			fmt.Fprintf(&b, "\ndo\n%s%s\nscripts.%s = main\nend\n", argsLocal(name), defs, name)
		} else {
			fmt.Fprintf(&b, "\nscripts.%s = function()\n%s%s\nend\n", name, argsLocal(name), scriptText(name))
		}
		flags := functionFlags[name]
		if _, listed := functionFlags[name]; !listed {
			flags = []string{"allow-oom"}
		}
		call := "run(scripts." + name + ", keys, args)"
		if plainScripts[name] {
			call = "bind(keys, args) return scripts." + name + "()"
		}
		regs = append(regs, reg{name, luaList(flags), call})
		if name == "batch" {
			regs = append(regs, reg{name + FreeSuffix, luaList([]string{"allow-oom"}), call})
		}
	}
	code := b.String()
	h := sha1.New()
	h.Write([]byte(code))
	for _, r := range regs {
		fmt.Fprintf(h, "%s %s %s\n", r.name, r.flags, r.call)
	}
	sum := h.Sum(nil)
	lib := Library{Name: "gmq_" + hex.EncodeToString(sum[:])[:12]}
	var out strings.Builder
	fmt.Fprintf(&out, "#!lua name=%s\n%s\n", lib.Name, code)
	for _, r := range regs {
		fmt.Fprintf(&out, "redis.register_function{function_name = '%s', flags = %s,\n"+
			"  callback = function(keys, args) %s end}\n", lib.Function(r.name), r.flags, returned(r.call))
	}
	lib.Code = out.String()
	return lib
})

// returned is a callback's body that returns what call gives: call itself
// when it returns already.
func returned(call string) string {
	if strings.Contains(call, "return ") {
		return call
	}
	return "return " + call
}

// mainCall ends a script whose functions are defined once, in the
// library, not on every call (hoist).
const mainCall = "return main()"

// hoist splits a script that ends by calling its main function into the
// rest, its definitions: in the library they are made once, when it is
// loaded, and main is the function. A script's closures cost Redis on every
// call otherwise (an empty batch call fell from 22 to 17 µs when they were
// hoisted: docs/performance-log.md, "Where Redis's CPU goes, with Lua's own
// symbols").
// What such a script keeps for one call is declared bare and set by main
// (TestScriptStateIsPerCall).
func hoist(script string) (defs string, ok bool) {
	trimmed := strings.TrimRight(script, "\n")
	if !strings.HasSuffix(trimmed, "\n"+mainCall) {
		return "", false
	}
	return strings.TrimSuffix(trimmed, mainCall), true
}

func read(name string) string {
	body, err := files.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("lua: %s: %v", name, err))
	}
	return string(body)
}

func luaList(items []string) string {
	if len(items) == 0 {
		return "{}"
	}
	return "{'" + strings.Join(items, "', '") + "'}"
}

// argsLocal is the line that starts a library script's body: A, its row
// of ARGS (lua.ScriptArgs), which it reads its arguments by.
func argsLocal(script string) string {
	if argsTable(script) == "" {
		return ""
	}
	return "local A = ARGS." + script + "\n"
}
