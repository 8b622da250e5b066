-- batches.lua keeps batches (docs/workflows.md "Batches", pool/batches.go):
-- jobs pushed together whose ends are counted, and callbacks pushed once
-- when the last one ends. A batch lives in one bucket; its members, in any
-- bucket, carry its id (F_BATCH), and each one's end leaves the batch a
-- notice among its own bucket's follow-ups (lib.lua announce_end), which
-- the pool hands here (tell). A member is counted once, by its member:
-- a notice told twice, or a second end of one job, changes nothing.
-- Members are listed before they are pushed (open, add), each also in the
-- bucket's unstored set until its push is done (stored); a listed member
-- that is neither counted nor stored keeps the batch pending, so a batch
-- cannot finish while a push of its is under way, nor before its create
-- has answered (creating, cleared by its last stored). One a crash left
-- unstored is dropped by the pool's sweep once its deadline passed, after
-- it found no such job (drop). A closed batch whose members have all ended
-- is done: on_complete is pushed, and on_success when none died; on_death
-- is pushed at the first death. Callbacks are follow-ups of this bucket
-- (outcomes.follow_up), each pushed once by its marker, with the batch's
-- summary as the result a callback with_result takes. A finished batch is
-- removed by the pool past its retention (remove).
-- KEYS: the shared layout (contract.lua) with no topic, then the batch's
--   hash, its members (set), its ends (hash: member -> how), its dead
--   (hash: member -> its last error), its results (hash: member -> result),
--   and the bucket's batches (zset: id -> created ms), finished batches
--   (zset: id -> ms it is removed at) and unstored members (zset:
--   'ID MEMBER' -> ms its push must be done by).
-- ARGV: origin, then a mode and its arguments (lua.ScriptArgs "batches ...")
--       'open', id, state ('open' or 'closed'), meta (JSON text, '' none),
--         with_results ('1'), retention (ms), on_complete, on_success, on_death
--         (follow-up entries, JSON [[id, spec]], '' none), deadline (ms), members...
--         -> {'OK'} or {'EXISTS'}
--       'add', id, deadline, max (members at most), members... -> {'OK', with_results ('1')},
--         {'FULL', members now}, {'NOT_FOUND'} or {'STATE', state}
--       'stored', id, created ('1': the create's own), members... -> {'OK', state, kept}
--         (kept '1': the call kept a callback, due now, among the follow-ups)
--       'drop', id, members... -> {'OK', state, kept}
--       'close', id -> {'OK', state, kept}, {'NOT_FOUND'} or {'STATE', state}
--       'tell', id, ends... (each four values: member, how, error, result: the
--         notices of one batch a timer round took) -> {'OK', state, kept} or {'ABSENT'}
--       'cancel', id -> {'OK', the members not yet ended...}, {'NOT_FOUND'} or {'STATE', state}
--       'remove', id -> {'OK'}
--       'sweep', id (any: the bucket's keys are read), n -> {finished batches due for
--         removal, up to n}, {unstored 'ID MEMBER' past their deadline, up to n}
--       'due', id (any) -> {'OK'}: BATCHES_DUE at the soonest sweep left, or gone
-- BATCHES_DUE in the bucket's due zset wakes its timer for the sweep
-- (pool/batches.go batchesDue) at the soonest unstored deadline or removal.
local BATCHES_DUE = '@batches'
-- The batch's keys come last, in the order pool/batches.go batchKeys gives.
local base = #KEYS - 8
local hash, members, ends, dead, results = op_key(base + 1), op_key(base + 2), op_key(base + 3), op_key(base + 4), op_key(base + 5)
local batches, finished, unstored = op_key(base + 6), op_key(base + 7), op_key(base + 8)
local mode = ARGV[A.mode]
local a = A[mode]
local id = ARGV[a.id]
local now = now_ms()

-- public is a member's id as the API shows it.
local function public(member) return (string.gsub(member, '^0+', '')) end

-- summary is the batch's counts as a JSON object's text: the result its
-- callbacks with_result take. meta and the results are JSON texts, kept
-- as they came (no decode, which would change numbers).
local function summary(b)
  local parts = {'{"batch":"', id, '","state":"', b.state, '","total":', redis.call('SCARD', members),
    ',"completed":', b.completed, ',"dead":', b.dead, ',"removed":', b.removed,
    ',"meta":', (b.meta ~= '' and b.meta or 'null')}
  if b.with_results == '1' then
    -- RESULTS_MAX bounds the results the summary holds (bytes of their
    -- text), so a callback's body stays a push's size: the rest are
    -- counted (results_left_out) and read from their jobs.
    local RESULTS_MAX = 32768
    parts[#parts + 1] = ',"results":{'
    -- The first result that does not fit ends the reading: a batch of
    -- 100,000 results is not read whole for the 32 KiB it shows.
    local cursor, size, shown, full = '0', 0, 0, false
    repeat
      local page = redis.call('HSCAN', results, cursor, 'COUNT', 100)
      cursor = page[1]
      for i = 1, #page[2], 2 do
        local entry = '"' .. public(page[2][i]) .. '":' .. page[2][i + 1]
        if size + #entry > RESULTS_MAX then
          full = true
          break
        end
        if shown > 0 then parts[#parts + 1] = ',' end
        parts[#parts + 1] = entry
        size, shown = size + #entry + 1, shown + 1
      end
    until cursor == '0' or full
    parts[#parts + 1] = '},"results_left_out":' .. (redis.call('HLEN', results) - shown)
  end
  parts[#parts + 1] = '}'
  return table.concat(parts)
end

local FIELDS = {'state', 'completed', 'dead', 'removed', 'meta', 'with_results', 'retention', 'on_complete', 'on_success', 'finished', 'creating'}
local function read()
  local v = redis.call('HMGET', hash, unpack(FIELDS))
  if not v[1] then return nil end
  local b = {}
  for i, f in ipairs(FIELDS) do b[f] = v[i] or '' end
  return b
end

-- finish ends a closed (or cancelled) batch whose every member has ended:
-- a closed one is done, its callbacks kept to be pushed; either is
-- removed past its retention.
-- kept says whether this call kept a callback among its bucket's
-- follow-ups, due now: its reply tells the pool, which pushes them at once.
local kept = ''

local function finish(b)
  if b.finished ~= '' or (b.state ~= 'closed' and b.state ~= 'cancelled') then return end -- once
  if b.creating == '1' and b.state ~= 'cancelled' then return end -- its create has not answered yet
  if redis.call('HLEN', ends) < redis.call('SCARD', members) then return end
  if b.state == 'closed' then
    b.state = 'done'
    redis.call('HSET', hash, 'state', 'done')
    local text = summary(b)
    if b.on_complete ~= '' then outcomes.follow_up(b.on_complete, now, text, {}); kept = '1' end
    if b.on_success ~= '' and tonumber(b.dead) == 0 then outcomes.follow_up(b.on_success, now, text, {}); kept = '1' end
  end
  b.finished = now
  redis.call('HSET', hash, 'finished', now)
  redis.call('ZADD', finished, now + tonumber(b.retention), id)
  redis.call('ZADD', K_DUE, 'LT', now + tonumber(b.retention), BATCHES_DUE)
end

-- list adds members to the batch, each unstored until its push is done.
local function list(from, deadline)
  for i = from, #ARGV do
    redis.call('SADD', members, ARGV[i])
    redis.call('ZADD', unstored, deadline, id .. ' ' .. ARGV[i])
  end
  if from <= #ARGV then redis.call('ZADD', K_DUE, 'LT', deadline, BATCHES_DUE) end
end

if mode == 'open' then
  if redis.call('EXISTS', hash) == 1 then return REPLY.status(R.EXISTS) end
  redis.call('HSET', hash, 'state', ARGV[a.state], 'created', now, 'creating', 1, 'completed', 0, 'dead', 0, 'removed', 0,
    'meta', ARGV[a.meta], 'with_results', ARGV[a.with_results], 'retention', ARGV[a.retention],
    'on_complete', ARGV[a.on_complete], 'on_success', ARGV[a.on_success], 'on_death', ARGV[a.on_death])
  redis.call('ZADD', batches, now, id)
  list(a.members, tonumber(ARGV[a.deadline]))
  return REPLY.status(R.OK)
end
if mode == 'remove' then
  redis.call('UNLINK', hash, members, ends, dead, results)
  redis.call('ZREM', batches, id)
  redis.call('ZREM', finished, id)
  return REPLY.status(R.OK)
end
if mode == 'sweep' then
  local n = tonumber(ARGV[a.n])
  return REPLY.batches_sweep(redis.call('ZRANGE', finished, '-inf', now, 'BYSCORE', 'LIMIT', 0, n),
    redis.call('ZRANGE', unstored, '-inf', now, 'BYSCORE', 'LIMIT', 0, n))
end
if mode == 'due' then
  local soonest
  for _, z in ipairs({finished, unstored}) do
    local first = redis.call('ZRANGE', z, 0, 0, 'WITHSCORES')
    if first[2] and (not soonest or tonumber(first[2]) < soonest) then soonest = tonumber(first[2]) end
  end
  if soonest then redis.call('ZADD', K_DUE, soonest, BATCHES_DUE) else redis.call('ZREM', K_DUE, BATCHES_DUE) end
  return REPLY.status(R.OK)
end
local b = read()
if not b then return mode == 'tell' and REPLY.batches.ABSENT() or REPLY.batches.NOT_FOUND() end
if mode == 'stored' then
  -- The members pushed; created: the create that made the batch is done,
  -- so it may finish (an empty one, closed: done at once). It answers the
  -- state: a batch cancelled meanwhile has its adder cancel what it pushed.
  for i = a.members, #ARGV do redis.call('ZREM', unstored, id .. ' ' .. ARGV[i]) end
  if ARGV[a.created] == '1' and b.creating == '1' then
    b.creating = ''
    redis.call('HDEL', hash, 'creating')
    finish(b)
  end
  return REPLY.batches.OK(b.state, kept)
end
if mode == 'add' then
  if b.state ~= 'open' and b.state ~= 'closed' then return REPLY.batches.STATE(b.state) end
  local total = redis.call('SCARD', members)
  if total + #ARGV - a.members + 1 > tonumber(ARGV[a.max]) then return REPLY.batches_add.FULL(total) end
  list(a.members, tonumber(ARGV[a.deadline]))
  return REPLY.batches_add.OK(b.with_results)
end
if mode == 'drop' then
  -- Members whose push never stored them (a refusal, or a crash the sweep
  -- found): no longer the batch's, unless their end was counted.
  for i = a.members, #ARGV do
    redis.call('ZREM', unstored, id .. ' ' .. ARGV[i])
    if redis.call('HEXISTS', ends, ARGV[i]) == 0 then redis.call('SREM', members, ARGV[i]) end
  end
  finish(b)
  return REPLY.batches.OK(b.state, kept)
end
if mode == 'close' then
  if b.state == 'cancelled' then return REPLY.batches.STATE(b.state) end
  if b.state == 'open' then
    b.state = 'closed'
    redis.call('HSET', hash, 'state', 'closed')
    finish(b)
  end
  return REPLY.batches.OK(b.state, kept)
end
if mode == 'cancel' then
  if b.state == 'done' then return REPLY.batches.STATE(b.state) end
  local out = REPLY.batches_cancel.OK() -- then the members not yet ended
  if b.state ~= 'cancelled' then
    b.state = 'cancelled'
    redis.call('HSET', hash, 'state', 'cancelled')
  end
  for _, m in ipairs(redis.call('SMEMBERS', members)) do
    if redis.call('HEXISTS', ends, m) == 0 then out[#out + 1] = m end
  end
  finish(b)
  return out
end
-- tell: members ended, each how ('completed', 'dead', or another end:
-- removed), its error and its result; the batch finishes once, after all.
for i = a.ends, #ARGV - 3, 4 do
  local member, how = ARGV[i], ARGV[i + 1]
  -- Not (or no longer) a member, or counted before: nothing to count.
  if redis.call('SISMEMBER', members, member) == 1 and redis.call('HSETNX', ends, member, how) == 1 then
    local field = (how == 'completed' or how == 'dead') and how or 'removed'
    b[field] = redis.call('HINCRBY', hash, field, 1)
    if how == 'dead' then
      redis.call('HSET', dead, member, ARGV[i + 2])
      if b.state ~= 'cancelled' and redis.call('HSETNX', hash, 'death_told', now) == 1 then
        local on_death = redis.call('HGET', hash, 'on_death') or ''
        if on_death ~= '' then outcomes.follow_up(on_death, now, summary(b), {}); kept = '1' end
      end
    end
    if how == 'completed' and b.with_results == '1' then
      redis.call('HSET', results, member, ARGV[i + 3] ~= '' and ARGV[i + 3] or 'null')
    end
  end
end
finish(b)
return REPLY.batches.OK(b.state, kept)
