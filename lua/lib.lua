-- lib.lua follows contract.lua, which is generated from lua/contract.go and
-- names the KEYS layout (K_* and topic_keys), the job record's fields (F_*),
-- the states, new_record and reply, in gmq's library of Redis Functions
-- (library.go) and before a topic-scoped script run as one (lua.go Source).
-- It and the lib_*.lua files that follow it (lib_events: a job's history
-- and events stream; lib_topics: fanout and the
-- topic list; lib_groups: fair groups; lib_jobs: a job's moves,
-- reservation, delete and expiry;
-- lib_failures: retries and the dead; lib_limits: rate and concurrency
-- limits) hold the helpers the transitions
-- share. This file holds what a call keeps: settings, the clock, deferred
-- writes, counters, and begin. A library is loaded once and
-- its functions called many times, so what lib.lua keeps for one call (the
-- call's keys, its clock, settings read, deferred writes) is set by begin,
-- at the start of every call, never when the library is loaded.
-- ARGV[1] of every topic-scoped script is the calling broker's origin id,
-- sent with wake-ups, then '/' and the store's format when it is over 1
-- ('host-1-ab/2'): the format the call writes (pool/format.go).

local ORIGIN -- the call's caller (begin), without its format

-- caller_of splits the calling broker, the first of every library
-- script's arguments ('host-1-ab/2', or 'host-1-ab': format 1), into its
-- origin and the store format it writes.
local function caller_of(args)
  local caller = args[1]
  local origin, format = string.match(caller, '^(.*)/(%d+)$')
  if origin then return origin, tonumber(format) end
  return caller, 1
end
-- EVERYONE stands for the origin of a wake-up every broker acts on, the
-- calling one too (pool/timers.go: no broker's origin is '*').
local EVERYONE = '*'

-- OUTBOX_DUE is the outbox's name in the bucket's due zset: the timer that
-- finds it due moves the outbox's jobs to their topics. SCHEDULE_DUE starts
-- a schedule's (pool/schedules.go scheduleDue).
local OUTBOX_DUE = '@outbox'
local SCHEDULE_DUE = '@schedule '


-- CONFIGURED, a field of the bucket's defaults, says some topic of the
-- bucket has settings of its own (pool/config.go sets it, never removes it).
local CONFIGURED = '@configured'

-- FANOUT_MARK, another, says some topic of the bucket has fanout children
-- (set by set_children, never removed), so pushes elsewhere skip the lookup.
local FANOUT_MARK = '@fanout'
local default_settings
-- bucket_defaults returns the bucket's defaults hash (settings and marks),
-- read once per script.
local function bucket_defaults()
  if not default_settings then
    default_settings = {}
    local d = redis.call('HGETALL', K_DEFAULTS)
    for k = 1, #d, 2 do default_settings[d[k]] = d[k + 1] end
  end
  return default_settings
end
-- glob_match says whether name matches a glob split by glob_parts (below), in one
-- pass (job.MatchTopic's way): the first part at its start, each middle one
-- at its first place after, the last at its end. A Lua pattern ('.*' a
-- '*') would backtrack, and a long name that misses a glob of several '*'s
-- could hold Redis for seconds.
local function glob_match(parts, name)
  local first, last = parts[1], parts[#parts]
  if string.sub(name, 1, #first) ~= first then return false end
  local at = #first + 1
  for i = 2, #parts - 1 do
    local s, e = string.find(name, parts[i], at, true)
    if not s then return false end
    at = e + 1
  end
  return #name - #last + 1 >= at and string.sub(name, #name - #last + 1) == last
end

-- patterns returns the bucket's topic patterns, least specific first (the
-- most characters besides '*' last, then by name: job.SortPatterns), each
-- {parts = glob_parts, settings}, read once per call. What only it uses is
-- in its block: the library's main function holds at most 200 locals.
local bucket_patterns
local patterns
do
-- PATTERN starts the field of a topic pattern ([topic.crawl/*]) in the
-- bucket's defaults: "@pattern GLOB" -> "setting=value ..." (topic_patterns.lua).
local PATTERN = '@pattern '
-- glob_parts splits a glob at its '*'s: {'crawl/', ''} for 'crawl/*'.
local function glob_parts(glob)
  local parts, from = {}, 1
  while true do
    local star = string.find(glob, '*', from, true)
    if not star then break end
    parts[#parts + 1] = string.sub(glob, from, star - 1)
    from = star + 1
  end
  parts[#parts + 1] = string.sub(glob, from)
  return parts
end

function patterns()
  if bucket_patterns then return bucket_patterns end
  bucket_patterns = {}
  for k, v in pairs(bucket_defaults()) do
    if string.sub(k, 1, #PATTERN) == PATTERN then
      local glob = string.sub(k, #PATTERN + 1)
      local parts = glob_parts(glob)
      local p = {glob = glob, parts = parts, settings = {}, rank = #glob - (#parts - 1)}
      for word in string.gmatch(v, '%S+') do
        local name, value = string.match(word, '^([^=]+)=(.*)$')
        if name then p.settings[name] = value end
      end
      bucket_patterns[#bucket_patterns + 1] = p
    end
  end
  table.sort(bucket_patterns, function(a, b)
    if a.rank ~= b.rank then return a.rank < b.rank end
    return a.glob < b.glob
  end)
  return bucket_patterns
end
end

-- topic_config returns topic t's effective settings (setting -> string):
-- the bucket's defaults, under the patterns that match its name (the most
-- specific on top), under its conf.ini section ("file."), under its
-- run-time changes ("run."); a fanout child (parent+child) inherits its
-- parent's two layers, under its own (kestrel's inheritance). Read once per
-- script.
local topic_settings
local function topic_config(t)
  local c = topic_settings[t.name]
  if c then return c end
  bucket_defaults()
  c = {}
  for k, v in pairs(default_settings) do
    if string.sub(k, 1, 1) ~= '@' then c[k] = v end -- marks are not settings
  end
  for _, p in ipairs(patterns()) do
    if glob_match(p.parts, t.name) then
      for k, v in pairs(p.settings) do c[k] = v end
    end
  end
  -- Most buckets have no topic with settings of its own: their defaults
  -- say so, and the topic's hash is not read.
  if not default_settings[CONFIGURED] then
    topic_settings[t.name] = c
    return c
  end
  local hashes = {t.config}
  if t.parent_config ~= t.config then hashes = {t.parent_config, t.config} end
  for _, hash in ipairs(hashes) do
    local layers = redis.call('HGETALL', hash)
    for _, layer in ipairs({'file.', 'run.'}) do
      for k = 1, #layers, 2 do
        if string.sub(layers[k], 1, #layer) == layer then c[string.sub(layers[k], #layer + 1)] = layers[k + 1] end
      end
    end
  end
  topic_settings[t.name] = c
  return c
end

-- now_ms is Redis's clock, read once per script: a script is atomic, so one
-- instant serves all of it (and a batch of operations costs one TIME).
local clock
local function now_ms()
  if not clock then
    local t = redis.call('TIME')
    clock = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return clock
end

-- cut_text is s cut to at most n bytes, not inside a UTF-8 character (at
-- most 3 steps back: a character is at most 4 bytes): a text cut inside
-- one reads back ending in U+FFFD. Every text a script keeps cut (a log
-- line, a history's or an event's detail, an error) is cut by it.
local function cut_text(s, n)
  if #s <= n then return s end
  local at = n
  while at > n - 3 and string.byte(s, at + 1) >= 0x80 and string.byte(s, at + 1) < 0xC0 do at = at - 1 end
  return string.sub(s, 1, at)
end

-- Deferred writes. Counters, due-time hints and wake-ups are only written,
-- never read back, by the scripts that change them, so they are summed while
-- a script runs and written once at its end by flush (lua.go calls it after
-- every script's body): a batch of n jobs costs one HINCRBY per counter, one
-- ZADD per topic's due time and one wake-up per topic, not n of each.
local deltas    -- hash key -> field -> sum
local due_hints -- topic name -> earliest due ms
local wakes     -- topic name -> {waiting key, jobs made ready, true to wake this broker's consumers too}
-- endings: {channel, message} of each job that ended this call with a
-- broker waiting for its end (F_WAITED): flush announces them.
local endings
-- expiring: topic info hash -> true when a job that expires entered the
-- topic: flush marks the topic ('expiring' in its info), so that pops look
-- for expired jobs only in topics that may have some.
local expiring
-- deferred holds two more of what flush does (a table: the library's main
-- function holds at most 200 locals):
-- deferred.noticed: this call left notices among the bucket's follow-ups
-- (a job others wait for, or a batch's, ended): flush has every broker's
-- timer of the bucket told, so that they are handed over now, not at its
-- next round.
-- deferred.totals: false, or (a batch call's, which its main sets)
-- REPLY.batch_extra.TOTALS(), to which flush appends hash key, field, amount for each
-- total_jobs, total_reserves and total_deletes instead of writing it: the
-- broker adds those up in memory and writes them at most once a second
-- (pool/totals.go), so that the hot path's calls leave five HINCRBYs a job
-- out (issue 50). A topic's total_jobs is not among them: count_pushes
-- writes it (lib_topics.lua), as that write registers a new topic.
local deferred = {}

local function add(key, field, n)
  local fields = deltas[key]
  if not fields then
    fields = {}
    deltas[key] = fields
  end
  fields[field] = (fields[field] or 0) + n
end

local function flush()
  local totals = deferred.totals
  for key, fields in pairs(deltas) do
    for field, n in pairs(fields) do
      if n ~= 0 then
        if totals and (field == 'total_jobs' or field == 'total_reserves' or field == 'total_deletes') then
          totals[#totals + 1], totals[#totals + 2], totals[#totals + 3] = key, field, n
        else
          redis.call('HINCRBY', key, field, n)
        end
      end
    end
  end
  for name, ms in pairs(due_hints) do
    redis.call('ZADD', K_DUE, 'LT', ms, name)
  end
  for info in pairs(expiring) do
    redis.call('HSET', info, 'expiring', '1')
  end
  for _, e in ipairs(endings) do redis.call('PUBLISH', e[1], e[2]) end
  if deferred.noticed then
    -- The wake channel and the bucket, from the due key's name
    -- (pool/keys.go: PREFIX:{bN}:due, PREFIX:wake). "* 0 @followups N" is
    -- a wake-up of no jobs in no topic to a broker before this (pool/timers.go
    -- parseWake): it changes nothing there.
    local prefix, b = string.match(K_DUE, '^(.*):{b(%d+)}:due$')
    if prefix then redis.call('PUBLISH', prefix .. ':wake', EVERYONE .. ' 0 @followups ' .. b) end
  end
  for name, w in pairs(wakes) do
    local channel = redis.call('GET', w[1])
    -- A broker skips its own wake-ups (it wakes its consumers itself after
    -- a push), except those sent as EVERYONE's.
    local from = ORIGIN
    if w[3] then from = EVERYONE end
    if channel then redis.call('PUBLISH', channel, from .. ' ' .. w[2] .. ' ' .. name) end
  end
end

local function load(member)
  local raw = redis.call('HGET', K_JOBS, member)
  if not raw then return nil end
  return cmsgpack.unpack(raw)
end

local function save(member, job)
  redis.call('HSET', K_JOBS, member, cmsgpack.pack(job))
end

-- jobbody holds where bodies are (a table: the library's main function
-- holds at most 200 locals). Store format 2 keeps a short body in its
-- record (F_BODY); format 1, and a long body, the bucket's bodies hash:
-- both are read, always. jobbody.format is the store's format as the
-- calling broker last read it, the one the call writes (begin).
local jobbody = {}
do
  -- INLINE is the longest body a record holds in store format 2: a longer
  -- one stays in the bodies hash, where a transition does not copy it (a
  -- record is written whole at each), and its own entry's ~80 bytes are
  -- little beside it.
  local INLINE = 4096
  jobbody.INLINE = INLINE

  -- jobbody.read is the body of job (its record, read), member.
  function jobbody.read(member, job)
    local body = job[F_BODY]
    if body then return body end
    return redis.call('HGET', K_BODIES, member)
  end

  -- jobbody.keep gives job (member) body, where the call's format says: its
  -- record (which the caller saves), or the bodies hash (by write, as
  -- redis.call). fresh: a new record, with no body anywhere yet.
  function jobbody.keep(member, job, body, fresh, write)
    write = write or redis.call
    local inline = jobbody.format >= 2 and #body <= INLINE
    if inline and not fresh and job[F_BODY] == nil then
      write('HDEL', K_BODIES, member) -- it was in the hash: moved to the record
    end
    if inline then
      job[F_BODY] = body
    else
      job[F_BODY] = nil
      write('HSET', K_BODIES, member, body)
    end
  end

  -- jobbody.drop removes the body of a job (member; its record, or nil)
  -- being removed, unless its record held it.
  function jobbody.drop(member, job, write)
    if job == nil or job[F_BODY] == nil then (write or redis.call)('HDEL', K_BODIES, member) end
  end
end

-- announce_end notes that job (member) ended, how ('completed', 'dead',
-- 'acked', 'deleted', 'expired', 'taken', 'discarded', 'cancelled'), when a
-- broker waits for its end (F_WAITED): every broker's subscriber hears
-- "* end MEMBER HOW" (pool.Wake), an older broker's ignores it. The jobs
-- that wait for it (F_DEPENDENTS, lib_deps.lua) are each left a notice in
-- the bucket's follow-ups, due now, which a timer hands over
-- (pool/deps.go): "completed" (an ack, kept or not, or a pop of a TTR 0
-- job) with its result (result, or its record's; a JSON value's text), or
-- how it ended otherwise. The list leaves the job, so a job that ends
-- again (a dead one retried) tells no one twice; a notice told twice
-- changes nothing (deps.told). A member of a batch (F_BATCH) leaves its
-- batch a notice the same way (pool/batches.go), at every end: the batch
-- counts a member once (batches.lua tell). A job no one waits for, in no
-- batch, costs three lookups.
local function announce_end(member, job, how, result)
  local channel = job[F_WAITED]
  if channel then endings[#endings + 1] = {channel, EVERYONE .. ' end ' .. member .. ' ' .. how} end
  local dependents, batch = job[F_DEPENDENTS], job[F_BATCH]
  if not dependents and not batch then return end
  deferred.noticed = true
  job[F_DEPENDENTS] = nil
  if how == 'acked' or how == 'taken' then how = 'completed' end
  local now = now_ms()
  if how == 'completed' then result = result or job[F_RESULT] else result = nil end
  for dependent, topic in string.gmatch(dependents or '', '(%S+) (%S+)') do
    local id = 'd ' .. dependent .. ' ' .. member -- pool/deps.go depNoticePrefix
    redis.call('HSET', K_FOLLOWUP_SPECS, id, cjson.encode({dependent = dependent, topic = topic, how = how,
      result = result, at = now}))
    redis.call('ZADD', K_FOLLOWUPS, now, id)
  end
  if batch then -- its batch's notice (batches.lua tell), once per end; F_BATCH stays: the batch counts one
    local bid, keeps = string.match(batch, '^(%S+)( ?r?)$')
    local id = 'b ' .. bid .. ' ' .. member -- pool/batches.go batchNoticePrefix
    redis.call('HSET', K_FOLLOWUP_SPECS, id, cjson.encode({how = how, at = now,
      error = how == 'dead' and (job[F_LAST_ERROR] or '') or nil, result = keeps == ' r' and result or nil}))
    redis.call('ZADD', K_FOLLOWUPS, now, id)
  end
  redis.call('ZADD', K_DUE, 'LT', now, '@followups') -- pool/followups.go followupsDue
end

-- count adds n to a bucket counter; count_topic to one of topic t's.
local function count(field, n) add(K_STATS, field, n) end
local function count_topic(t, field, n) add(t.info, field, n) end
-- drop_bytes lowers topic t's byte count by a removed job's body (a
-- completed job's no longer counts: lib_outcomes.lua).
local function drop_bytes(t, job)
  if job[F_STATE] == COMPLETED or job[F_STATE] == CANCELLED then return end
  local size = job[F_SIZE] or 0
  if size > 0 then add(t.info, 'bytes', -size) end
end

-- move_state updates the bucket's current-* counters for a job leaving `from`
-- (or nothing) and entering `to` (or nothing).
local function move_state(from, to)
  if from then count(STATE_COUNTER[from], -1) end
  if to then count(STATE_COUNTER[to], 1) end
end


-- schedule makes the bucket's timer look at topic t no later than at ms.
local function schedule(t, ms)
  local cur = due_hints[t.name]
  if not cur or ms < cur then due_hints[t.name] = ms end
end

-- children_of: a parent's children, read once per call (lib_topics.lua).
local children_of
-- limits_of: topic name -> its limits in this call, or false (lib_limits.lua).
local limits_of
-- groups holds lib_groups.lua's functions (made when the library loads)
-- and its per-call state: of, topic name -> whether it is grouped; picks,
-- topic NUL group -> the jobs this call's pops took from the group (not
-- yet counted reserved).
local groups = {}
-- dropped_cids gathers the member and client id of each job a call
-- expired or dropped, for the caller to drop the client ids (as after a
-- delete: lib_jobs.lua expire_job, lib_failures.lua drop_dead).
local dropped_cids

-- renew returns table t emptied for a new call, or a new table when there
-- is none yet. A call's state is kept in the same tables from call to call:
-- making them afresh (and collecting them) was a good part of a small
-- call's cost (docs/PERFORMANCE.md). A table that held more than RENEW_MAX
-- entries is replaced instead, since a table never shrinks and emptying
-- one walks all its slots.
local renew
do
local RENEW_MAX = 32
function renew(t)
  if not t then return {} end
  local n = 0
  for k in pairs(t) do
    n = n + 1
    if n > RENEW_MAX then return {} end
    t[k] = nil
  end
  return t
end
end

-- gathers gathers a call's writes (a table: the library's main function
-- holds at most 200 locals): one command per (command, key), its members
-- appended, made by gathers.flush (batch.lua at the end of each phase;
-- lib_lean.lua the same). A long one is split, as Lua's unpack is bounded.
-- gathers.add has redis.call's shape, so the helpers that take `write`
-- take it. Its list and index are set by begin.
local gathers = {}
function gathers.add(cmd, key, a, b)
  local by = gathers.at[key] -- command -> its gathered command, of this key
  if not by then
    by = {}
    gathers.at[key] = by
  end
  local c = by[cmd]
  if not c or #c >= 1000 then
    c = {cmd, key}
    by[cmd] = c
    gathers.list[#gathers.list + 1] = c
  end
  c[#c + 1] = a
  if b ~= nil then c[#c + 1] = b end
end
function gathers.flush()
  for _, c in ipairs(gathers.list) do redis.call(unpack(c)) end
  gathers.list, gathers.at = renew(gathers.list), renew(gathers.at)
end

-- hmget reads the fields of hash key, in chunks (Lua's unpack is bounded).
local function hmget(key, fields)
  if #fields <= 1000 then return redis.call('HMGET', key, unpack(fields)) end
  local out = {}
  for from = 1, #fields, 1000 do
    local got = redis.call('HMGET', key, unpack(fields, from, math.min(from + 999, #fields)))
    for k = 1, #got do out[from + k - 1] = got[k] end
  end
  return out
end

-- begin starts a call with its KEYS and ARGV: every variable above that
-- holds something of one call starts afresh here (TestLibStateIsPerCall
-- checks that each one is).
local function begin(keys, args)
  bind(keys, args)
  ORIGIN, jobbody.format = caller_of(args)
  default_settings, topic_settings, clock, bucket_patterns = nil, renew(topic_settings), nil, nil
  deltas, due_hints, wakes, expiring = renew(deltas), renew(due_hints), renew(wakes), renew(expiring)
  endings, deferred.noticed, deferred.totals = renew(endings), false, false
  children_of, dropped_cids, limits_of = renew(children_of), renew(dropped_cids), renew(limits_of)
  groups.of, groups.picks = renew(groups.of), renew(groups.picks)
  gathers.list, gathers.at = renew(gathers.list), renew(gathers.at)
end
