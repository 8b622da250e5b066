-- lib.lua follows contract.lua, which is generated from lua/contract.go and
-- names the KEYS layout (K_* and topic_keys), the job record's fields (F_*),
-- the states, new_record and reply, in gmq's library of Redis Functions
-- (library.go) and before a topic-scoped script run as one (lua.go Source).
-- It holds the helpers the transitions share. A library is loaded once and
-- its functions called many times, so what lib.lua keeps for one call (the
-- call's keys, its clock, settings read, deferred writes) is set by begin,
-- at the start of every call, never when the library is loaded.
-- ARGV[1] of every topic-scoped script is the calling broker's origin id, sent with wake-ups.

local ORIGIN -- the call's ARGV[1] (begin)

-- OUTBOX_DUE is the outbox's name in the bucket's due zset: the timer that
-- finds it due moves the outbox's jobs to their topics.
local OUTBOX_DUE = '@outbox'


-- CONFIGURED, a field of the bucket's defaults, says some topic of the
-- bucket has settings of its own (pool/config.go sets it, never removes it).
local CONFIGURED = '@configured'

-- FANOUT_MARK, another, says some topic of the bucket has fanout children
-- (set by set_children, never removed), so pushes elsewhere skip the lookup.
local FANOUT_MARK = '@fanout'
-- DEFAULT_MAX_FANOUT is max_fanout unset: pool/fanout.go's defaultMaxFanout.
local DEFAULT_MAX_FANOUT = '64'
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
-- topic_config returns topic t's effective settings (setting -> string):
-- the bucket's defaults, under the topic's conf.ini section ("file."), under
-- its run-time changes ("run."); a fanout child (parent+child) inherits its
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

-- Deferred writes. Counters, due-time hints and wake-ups are only written,
-- never read back, by the scripts that change them, so they are summed while
-- a script runs and written once at its end by flush (lua.go calls it after
-- every script's body): a batch of n jobs costs one HINCRBY per counter, one
-- ZADD per topic's due time and one wake-up per topic, not n of each.
local deltas    -- hash key -> field -> sum
local due_hints -- topic name -> earliest due ms
local wakes     -- topic name -> {waiting key, jobs made ready}
-- expiring: topic info hash -> true when a job that expires entered the
-- topic: flush marks the topic ('expiring' in its info), so that pops look
-- for expired jobs only in topics that may have some.
local expiring

local function add(key, field, n)
  local fields = deltas[key]
  if not fields then
    fields = {}
    deltas[key] = fields
  end
  fields[field] = (fields[field] or 0) + n
end

local function flush()
  for key, fields in pairs(deltas) do
    for field, n in pairs(fields) do
      if n ~= 0 then redis.call('HINCRBY', key, field, n) end
    end
  end
  for name, ms in pairs(due_hints) do
    redis.call('ZADD', K_DUE, 'LT', ms, name)
  end
  for info in pairs(expiring) do
    redis.call('HSET', info, 'expiring', '1')
  end
  for name, w in pairs(wakes) do
    local channel = redis.call('GET', w[1])
    if channel then redis.call('PUBLISH', channel, ORIGIN .. ' ' .. w[2] .. ' ' .. name) end
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

-- count adds n to a bucket counter; count_topic to one of topic t's.
local function count(field, n) add(K_STATS, field, n) end
local function count_topic(t, field, n) add(t.info, field, n) end
-- drop_bytes lowers topic t's byte count by a removed job's body.
local function drop_bytes(t, job)
  local size = job[F_SIZE] or 0
  if size > 0 then add(t.info, 'bytes', -size) end
end

-- move_state updates the bucket's current-* counters for a job leaving `from`
-- (or nothing) and entering `to` (or nothing).
local function move_state(from, to)
  if from then count(STATE_COUNTER[from], -1) end
  if to then count(STATE_COUNTER[to], 1) end
end

-- remove_from_state takes the member out of the set that holds it in its current state.
local function remove_from_state(t, member, job)
  redis.call('ZREM', t[STATE_SET[job[F_STATE]]], member)
end

-- schedule makes the bucket's timer look at topic t no later than at ms.
local function schedule(t, ms)
  local cur = due_hints[t.name]
  if not cur or ms < cur then due_hints[t.name] = ms end
end

-- Fanout. A topic named parent+child is a child of parent (the name up to
-- its first '+'): it is listed under its parent in the bucket's fanout hash
-- once referenced (pushed, popped, peeked, configured), and gets a copy of
-- every job pushed to the parent from then on, until it is deleted.
local children_of -- parent name -> list of child names, read once per script

-- parent_of is a child's parent's name, or nil for a topic that is no child.
local function parent_of(name)
  local plus = string.find(name, '+', 2, true)
  if plus then return string.sub(name, 1, plus - 1) end
end

-- children lists a parent's children. A push asks through fanout_children,
-- which skips the lookup in a bucket where no topic ever had a child.
local function children(parent)
  local c = children_of[parent]
  if not c then
    c = {}
    local v = redis.call('HGET', K_FANOUT, parent)
    if v then
      for name in string.gmatch(v, '%S+') do c[#c + 1] = name end
    end
    children_of[parent] = c
  end
  return c
end

local function fanout_children(parent)
  if not bucket_defaults()[FANOUT_MARK] then return {} end
  return children(parent)
end

-- set_children writes a parent's children.
local function set_children(parent, c)
  table.sort(c)
  children_of[parent] = c
  if #c == 0 then
    redis.call('HDEL', K_FANOUT, parent)
  else
    redis.call('HSET', K_FANOUT, parent, table.concat(c, ' '))
    if not bucket_defaults()[FANOUT_MARK] then
      redis.call('HSET', K_DEFAULTS, FANOUT_MARK, '1')
      default_settings[FANOUT_MARK] = '1'
    end
  end
end

-- add_topic lists topic t in its bucket (the set and its index) and says
-- whether it was not listed yet. A topic already listed costs one SADD, so
-- a push pays nothing more for the index.
local function add_topic(t)
  if redis.call('SADD', K_TOPICS, t.name) == 0 then return false end
  redis.call('ZADD', K_TOPIC_INDEX, 0, t.name)
  return true
end

-- drop_topic takes topic t off its bucket's list and its index.
local function drop_topic(t)
  redis.call('SREM', K_TOPICS, t.name)
  redis.call('ZREM', K_TOPIC_INDEX, t.name)
end

-- created notes when topic t came to be (its first job, or its first
-- reference as a fanout child), counts it, and schedules the check of its
-- max_queue_age (tick.lua).
local function created(t, now)
  if redis.call('HSETNX', t.info, 'created', now) == 0 then return end
  add(K_STATS, 'queue_creates', 1)
  local age = tonumber(topic_config(t).max_queue_age or '0')
  if age > 0 then
    schedule(t, now + age * 1000)
  end
end

-- reference lists topic t under its parent if it is a child and is not yet,
-- within the parent's limits; by_read says a read (pop, peek) names it.
local function reference(t, now, by_read)
  local parent = parent_of(t.name)
  if not parent then return end
  local c = children(parent)
  for _, name in ipairs(c) do
    if name == t.name then return end
  end
  -- The parent's limits (a child inherits its settings): at most max_fanout
  -- children (0: no limit), so a push's copies stay bounded; none made by a
  -- read (a pop, a peek) when fanout_on_read is false. A child refused here
  -- is an ordinary topic that gets no copies; the pool says why before.
  local cfg = topic_config(t)
  if by_read and cfg.fanout_on_read == 'false' then return end
  local most = tonumber(cfg.max_fanout or DEFAULT_MAX_FANOUT)
  if most > 0 and #c >= most then return end
  local grown = {unpack(c)}
  grown[#grown + 1] = t.name
  set_children(parent, grown)
  created(t, now)
end

-- unreference takes a deleted child off its parent's list.
local function unreference(t)
  local parent = parent_of(t.name)
  if not parent then return end
  local kept = {}
  for _, name in ipairs(children(parent)) do
    if name ~= t.name then kept[#kept + 1] = name end
  end
  set_children(parent, kept)
end

-- forget drops topic t, which holds no job, from its bucket: its listing,
-- its info (pause, totals, birth), its expiry index and its place in the
-- bucket's schedule. Its settings stay, and so does its place in its
-- parent's fanout list: only a delete (or max_queue_age) stops a child, by
-- unreference. The caller has checked it is empty.
local function forget(t)
  drop_topic(t)
  redis.call('DEL', t.info, t.expires)
  redis.call('ZREM', K_DUE, t.name)
  due_hints[t.name] = nil
  deltas[t.info] = nil
end

-- empty says topic t holds no job in any state.
local function empty(t)
  for _, set in ipairs({t.ready, t.delayed, t.reserved, t.buried, t.dead}) do
    if redis.call('EXISTS', set) == 1 then return false end
  end
  return true
end

-- expiry indexing. Every ready or delayed job that has an expiry is in its
-- topic's expires set, and the bucket's timer is told to look at the topic
-- then. Jobs leave the set when they are removed; a job reserved or buried
-- stays in it until a sweep finds it there (it cannot expire while a
-- consumer holds it or it is buried) and is indexed again when it returns.
local function index_expiry(t, member, job, write)
  local at = job[F_EXPIRES] or 0
  if at > 0 then
    (write or redis.call)('ZADD', t.expires, at, member)
    schedule(t, at)
    expiring[t.info] = true
  end
end
local function unindex_expiry(t, member, job, write)
  if (job[F_EXPIRES] or 0) > 0 then (write or redis.call)('ZREM', t.expires, member) end
end

-- make_ready puts a job into its topic's ready queue.
local function make_ready(t, member, job)
  job[F_STATE] = READY
  job[F_DUE] = 0
  redis.call('ZADD', t.ready, job[F_PRI], member)
  index_expiry(t, member, job)
end

-- wake tells other brokers that n jobs became ready in topic t, but only when
-- some broker has said it has consumers waiting there (the waiting key holds
-- the channel and expires when they are gone).
local function wake(t, n)
  local w = wakes[t.name]
  if w then w[2] = w[2] + n else wakes[t.name] = {t.waiting, n} end
end

-- settle decides where a pushed or released job goes: delayed by `delay` ms
-- from `now`, or ready when there is no delay.
local function settle(job, delay, now)
  if delay > 0 then
    job[F_STATE] = DELAYED
    job[F_DUE] = now + delay
  else
    job[F_STATE] = READY
    job[F_DUE] = 0
  end
end

-- The helpers that take `write` make their writes through it: redis.call
-- when it is nil, or batch.lua's gather, which turns many jobs' writes into
-- one command per key.

-- enter adds a settled job to its state's set: a delayed one schedules its
-- bucket's timer, a ready one is announced.
local function enter(t, member, job, write)
  write = write or redis.call
  index_expiry(t, member, job, write)
  if job[F_STATE] == DELAYED then
    write('ZADD', t.delayed, job[F_DUE], member)
    schedule(t, job[F_DUE])
  else
    write('ZADD', t.ready, job[F_PRI], member)
    wake(t, 1)
  end
end

-- place puts a released job where it belongs.
local function place(t, member, job, delay, now)
  settle(job, delay, now)
  enter(t, member, job)
end

-- answer is a successful call's reply: 'OK' and the job as it now is, with
-- its body, so callers need no second round trip to show it.
local function answer(member, job)
  local r = reply(member, job, redis.call('HGET', K_BODIES, member), now_ms())
  table.insert(r, 1, 'OK')
  return r
end

-- refusal says why an operation on a job (nil: there is none) that names
-- the job's topic and a delivery (attempt, 0: any) cannot go ahead: the reply
-- the script must return, or nil.
local function refusal(job, topic, attempt)
  if not job or job[F_STATE] == EXPIRED then return {'NOT_FOUND'} end -- an expired job is gone
  if job[F_TOPIC] ~= topic then return {'TOPIC', job[F_TOPIC]} end
  if attempt > 0 and attempt ~= job[F_RESERVES] then return {'STALE', job[F_RESERVES]} end
end

-- fetch loads a job for an operation that names its topic (whose keys were
-- passed) and a delivery. It returns the job, or nil and the reply the
-- script must return.
local function fetch(member, topic, attempt)
  local job = load(member)
  local refused = refusal(job, topic, attempt)
  if refused then return nil, refused end
  return job
end

-- fetch_reserved is fetch for the operations that need a reservation.
local function fetch_reserved(member, topic, attempt)
  local job, err = fetch(member, topic, attempt)
  if job and job[F_STATE] ~= RESERVED then return nil, {'STATE', job[F_STATE]} end
  return job, err
end

-- reserve_record counts a delivery of a job just taken out of the set of
-- state `from` and records it: reserved until now + TTR, or with a TTR of 0
-- deleted (state 0 in the job). The caller reads the body first.
local function reserve_record(t, member, job, from, now, write)
  write = write or redis.call
  job[F_RESERVES] = job[F_RESERVES] + 1
  count('total_reserves', 1)
  count_topic(t, 'total_reserves', 1)
  if job[F_TTR] == 0 then
    move_state(from, nil)
    drop_bytes(t, job)
    unindex_expiry(t, member, job, write)
    job[F_STATE] = 0
    write('HDEL', K_JOBS, member)
    write('HDEL', K_BODIES, member)
    return
  end
  move_state(from, RESERVED)
  job[F_STATE] = RESERVED
  job[F_DUE] = now + job[F_TTR]
  schedule(t, job[F_DUE])
  write('ZADD', t.reserved, job[F_DUE], member)
  write('HSET', K_JOBS, member, cmsgpack.pack(job))
end

-- reserve gives a job (just taken out of the set of state `from`) to a
-- consumer and returns the job reply.
local function reserve(t, member, job, from, now)
  local body = redis.call('HGET', K_BODIES, member)
  reserve_record(t, member, job, from, now)
  return reply(member, job, body, now)
end

-- delete_job removes a job in any state and counts the delete.
local function delete_job(t, member, job, write)
  write = write or redis.call
  write('ZREM', t[STATE_SET[job[F_STATE]]], member)
  write('HDEL', K_JOBS, member)
  write('HDEL', K_BODIES, member)
  move_state(job[F_STATE], nil)
  drop_bytes(t, job)
  unindex_expiry(t, member, job, write)
  count('total_deletes', 1)
  count_topic(t, 'total_deletes', 1)
end

-- Expiry. dropped_cids gathers the member and client id of each job a
-- script expired, for the caller to drop the client ids (as after a delete).
local dropped_cids

-- expire_job ends a ready or delayed job whose time ran out: it leaves its
-- topic (counted in total_expired) and is either removed or, when the topic
-- has an expire_to, kept in the bucket's outbox (state EXPIRED, its record
-- naming the new topic) until a bucket timer pushes it there afresh.
local function expire_job(t, member, job, now)
  local from = job[F_STATE]
  redis.call('ZREM', t[STATE_SET[from]], member)
  redis.call('ZREM', t.expires, member)
  move_state(from, nil)
  drop_bytes(t, job)
  count('total_expired', 1)
  count_topic(t, 'total_expired', 1)
  local cid = job[F_CID] or ''
  if cid ~= '' then
    dropped_cids[#dropped_cids + 1] = member
    dropped_cids[#dropped_cids + 1] = cid
  end
  local to = topic_config(t).expire_to or ''
  if to ~= '' and to ~= t.name then
    job[F_STATE] = EXPIRED
    job[F_TOPIC] = to
    job[F_DUE] = 0
    job[F_CID] = ''
    save(member, job)
    redis.call('ZADD', K_OUTBOX, now, member)
    redis.call('ZADD', K_DUE, 'LT', now, OUTBOX_DUE)
    return
  end
  redis.call('HDEL', K_JOBS, member)
  redis.call('HDEL', K_BODIES, member)
end

-- sweep_expired expires up to n of topic t's jobs whose time ran out and
-- unlists the reserved, buried or gone ones it meets. It returns how many
-- entries it looked at (fewer than n: none that is due is left) and how many
-- jobs it expired.
local function sweep_expired(t, now, n)
  local due = redis.call('ZRANGEBYSCORE', t.expires, '-inf', now, 'LIMIT', 0, n)
  if #due == 0 then return 0, 0 end
  local records = redis.call('HMGET', K_JOBS, unpack(due))
  local expired = 0
  for k, member in ipairs(due) do
    local job = records[k] and cmsgpack.unpack(records[k])
    if job and job[F_TOPIC] == t.name and (job[F_STATE] == READY or job[F_STATE] == DELAYED) then
      expire_job(t, member, job, now)
      expired = expired + 1
    else
      redis.call('ZREM', t.expires, member)
    end
  end
  return #due, expired
end

-- Failures (issue 12). retry_policy is job's policy: its topic's settings
-- (max_attempts, backoff, backoff_base, backoff_max in seconds,
-- backoff_jitter) under the job's own (F_RETRY: five words, max attempts,
-- backoff, base ms, max ms, jitter 0/1, each '-' to keep the topic's).
local function retry_policy(t, job)
  local cfg = topic_config(t)
  local p = {max_attempts = tonumber(cfg.max_attempts or '0'), backoff = cfg.backoff or 'exponential',
             base = tonumber(cfg.backoff_base or '1') * 1000, max = tonumber(cfg.backoff_max or '3600') * 1000,
             jitter = cfg.backoff_jitter == 'true'}
  local own = job[F_RETRY] or ''
  if own ~= '' then
    local f = {}
    for w in string.gmatch(own, '%S+') do f[#f + 1] = w end
    if f[1] ~= '-' then p.max_attempts = tonumber(f[1]) end
    if f[2] ~= '-' then p.backoff = f[2] end
    if f[3] ~= '-' then p.base = tonumber(f[3]) end
    if f[4] ~= '-' then p.max = tonumber(f[4]) end
    if f[5] ~= '-' then p.jitter = f[5] == '1' end
  end
  return p
end

-- backoff_delay is the wait (ms) before the next attempt after the
-- failures-th failure: fixed base, linear base x failures, or exponential
-- base x 2^(failures-1), at most max; with jitter a uniform share of it
-- between half and all (r, in [0, 1), comes from the caller: a script's
-- own random numbers are not random).
local function backoff_delay(p, failures, r)
  local d = p.base
  if p.backoff == 'linear' then
    d = p.base * failures
  elseif p.backoff == 'exponential' then
    d = p.base * 2 ^ math.min(failures - 1, 60)
  end
  if d > p.max then d = p.max end
  if p.jitter then d = d * (0.5 + r / 2) end
  return math.floor(d)
end

-- fail_record counts a failure of job with its error (kept to 1 KiB).
local function fail_record(t, job, err)
  job[F_FAILURES] = (job[F_FAILURES] or 0) + 1
  job[F_LAST_ERROR] = string.sub(err, 1, 1024)
  count('total_failures', 1)
  count_topic(t, 'total_failures', 1)
end

-- drop_dead removes a dead job of topic t for good (past dead_retention or
-- max_dead), counted as dead_dropped; its client id goes to dropped_cids.
local function drop_dead(t, member)
  local job = load(member)
  redis.call('ZREM', t.dead, member)
  redis.call('HDEL', K_JOBS, member)
  redis.call('HDEL', K_BODIES, member)
  move_state(DEAD, nil)
  count_topic(t, 'dead_dropped', 1)
  if job then
    drop_bytes(t, job)
    unindex_expiry(t, member, job)
    if (job[F_CID] or '') ~= '' then
      dropped_cids[#dropped_cids + 1] = member
      dropped_cids[#dropped_cids + 1] = job[F_CID]
    end
  end
end

-- trim_dead drops topic t's oldest dead jobs past its max_dead.
local function trim_dead(t)
  local cap = tonumber(topic_config(t).max_dead or '0')
  if cap <= 0 then return end
  local over = redis.call('ZCARD', t.dead) - cap
  if over <= 0 then return end
  for _, member in ipairs(redis.call('ZRANGE', t.dead, 0, over - 1)) do drop_dead(t, member) end
end

-- dead_retention is how long (ms) topic t keeps its dead jobs (default 7 days; 0: for ever).
local function dead_retention(t)
  return tonumber(topic_config(t).dead_retention or '604800') * 1000
end

-- kill moves a job that failed past its max_attempts (just taken out of the
-- set of state `from`) to its topic's dead set, schedules its removal after
-- dead_retention and keeps the set within max_dead.
local function kill(t, member, job, from, now)
  job[F_STATE] = DEAD
  job[F_DEAD_AT] = now
  job[F_DUE] = 0
  redis.call('ZADD', t.dead, now, member)
  move_state(from, DEAD)
  count('total_dead', 1)
  count_topic(t, 'total_dead', 1)
  save(member, job)
  local keep = dead_retention(t)
  if keep > 0 then schedule(t, now + keep) end
  trim_dead(t)
end

-- revive makes a dead job ready again with its failures forgotten (a retry
-- from the dead set, or a kick).
local function revive(t, member, job)
  redis.call('ZREM', t.dead, member)
  job[F_FAILURES] = 0
  job[F_DEAD_AT] = 0
  make_ready(t, member, job)
  move_state(DEAD, READY)
  save(member, job)
  wake(t, 1)
end

-- begin starts a call with its KEYS and ARGV: every variable above that
-- holds something of one call starts afresh here (TestLibStateIsPerCall
-- checks that each one is).
local function begin(keys, args)
  bind(keys, args)
  ORIGIN = args[1]
  default_settings, topic_settings, clock = nil, {}, nil
  deltas, due_hints, wakes, expiring = {}, {}, {}, {}
  children_of, dropped_cids = {}, {}
end
