-- batch.lua runs a bucket's pushes, pops and acks, in order, in one script
-- call. The pool gathers the operations on a bucket that arrive while its
-- earlier calls are in flight (pool/batch.go), so under load Redis pays the
-- overhead of a script call, and the writes of counters and wake-ups, once per
-- batch instead of once per job. Each operation is as atomic as the batch.
-- KEYS: the shared layout (lib.lua) with every topic the operations name.
-- ARGV: origin, n, the n topic names (in KEYS order), then the operations,
--   each as: kind, k, k topic numbers (1-based, into the names above), then
--   the kind's arguments:
--   push     member, priority, ttr ms, delay ms, body, client id ('' for none)
--            -> {'OK', now ms, due ms (0 when ready)}, or {'EXISTS'} when the member is taken
--   delete   member, attempt (0: unfenced), 'unreserved' to refuse a reserved job ('' otherwise)
--            -> {'OK', client id}, or {'NOT_FOUND'} / {'TOPIC', real topic} / {'STALE', reserves} / {'STATE', 3}
--   pop      mode ('first', 'best' or 'peek') -> pop_from's reply
--   pop_n    mode ('first' or 'best'), n: up to n pops -> {'JOBS', more, k, k job replies (16 fields each, flat)},
--            or pop_from's reply when there was none
--   ack_pop  member, attempt: delete the job, then pop 'first' from the other topics
--            -> {'OK', client id, pop_from's reply...}, or delete's refusal (nothing popped then)
--   The first topic of push, delete and ack_pop is the job's.
-- Returns one reply per operation, in order.

local paused = {} -- topic name -> paused_until ms, read once per call
local function paused_until(t)
  local ms = paused[t.name]
  if not ms then
    ms = tonumber(redis.call('HGET', t.info, 'paused_until') or '0')
    paused[t.name] = ms
  end
  return ms
end

local listed = {} -- topics known to be in the bucket's list during this call

local function push(ts, a)
  local t, member, delay = ts[1], a[1], tonumber(a[4])
  local now = now_ms()
  local job = {0, t.name, tonumber(a[2]), tonumber(a[3]), delay, now, 0, 0, 0, 0, 0, 0, a[6]}
  settle(job, delay, now)
  if redis.call('HSETNX', K_JOBS, member, cmsgpack.pack(job)) == 0 then return {'EXISTS'} end
  redis.call('HSET', K_BODIES, member, a[5])
  if not listed[t.name] then
    redis.call('SADD', K_TOPICS, t.name)
    listed[t.name] = true
  end
  count('total_jobs', 1)
  count_topic(t, 'total_jobs', 1)
  move_state(nil, job[F_STATE])
  enter(t, member, job)
  return {'OK', now, job[F_DUE]}
end

local function delete(ts, a)
  local t, member = ts[1], a[1]
  local job, err = fetch(member, t.name, tonumber(a[2]))
  if not job then return err end
  if a[3] == 'unreserved' and job[F_STATE] == RESERVED then return {'STATE', RESERVED} end
  delete_job(t, member, job)
  return {'OK', job[F_CID]}
end

-- pop_from reserves a ready job from topics ts, skipping paused ones. Mode
-- 'first': the best job of the first topic that has one (gmq's order);
-- 'best': the lowest (priority, id) among them all (beanstalkd's); 'peek':
-- only say which job 'best' would take. Within a topic: lowest priority
-- first, FIFO by id (the members sort by id). It returns {'OK', more, job
-- reply...} where more is 1 when the topic still has ready jobs (a TTR of 0
-- deletes the job as it is popped: state 0 in the reply); in peek mode
-- {'PEEK', topic, priority, member}; otherwise {'EMPTY', ms until the
-- earliest pause with ready jobs ends, or -1}.
local function pop_from(ts, mode)
  local now = now_ms()
  local pause_wait = -1
  local open = {}
  for _, t in ipairs(ts) do
    local until_ms = paused_until(t)
    if until_ms <= now then
      open[#open + 1] = t
    elseif redis.call('ZCARD', t.ready) > 0 and (pause_wait < 0 or until_ms - now < pause_wait) then
      pause_wait = until_ms - now
    end
  end
  local best, member
  if mode == 'first' or (mode == 'best' and #open == 1) then
    -- Each topic's head is its best job, so the first head found is the answer.
    for _, t in ipairs(open) do
      local head = redis.call('ZPOPMIN', t.ready)
      if head[1] then
        best, member = t, head[1]
        break
      end
    end
  else
    local best_pri
    for _, t in ipairs(open) do
      local head = redis.call('ZRANGE', t.ready, 0, 0, 'WITHSCORES')
      if head[1] then
        local pri = tonumber(head[2])
        if not best or pri < best_pri or (pri == best_pri and head[1] < member) then
          best, best_pri, member = t, pri, head[1]
        end
      end
    end
    if best and mode == 'peek' then return {'PEEK', best.name, best_pri, member} end
    if best then redis.call('ZREM', best.ready, member) end
  end
  if not best then return {'EMPTY', pause_wait} end
  local r = reserve(best, member, load(member), READY, now)
  local more = 0
  if redis.call('ZCARD', best.ready) > 0 then more = 1 end
  table.insert(r, 1, more)
  table.insert(r, 1, 'OK')
  return r
end

local function pop(ts, a) return pop_from(ts, a[1]) end

local function pop_n(ts, a)
  local out = {'JOBS', 0, 0}
  local r
  for _ = 1, tonumber(a[2]) do
    r = pop_from(ts, a[1])
    if r[1] ~= 'OK' then break end
    out[2] = r[2]
    out[3] = out[3] + 1
    for i = 3, #r do out[#out + 1] = r[i] end
  end
  if out[3] == 0 then return r end
  return out
end

local function ack_pop(ts, a)
  local acked = delete(ts, {a[1], a[2], ''})
  if acked[1] ~= 'OK' then return acked end
  local r = pop_from({unpack(ts, 2)}, 'first')
  table.insert(r, 1, acked[2])
  table.insert(r, 1, 'OK')
  return r
end

local kinds = {push = {push, 6}, delete = {delete, 3}, pop = {pop, 1}, pop_n = {pop_n, 2}, ack_pop = {ack_pop, 2}}

local topics = {}
local n = tonumber(ARGV[2])
for i = 1, n do topics[i] = topic_keys(i, ARGV[2 + i]) end

local out = {}
local i = 3 + n
while i <= #ARGV do
  local kind = kinds[ARGV[i]]
  if not kind then return redis.error_reply('batch: unknown operation ' .. tostring(ARGV[i])) end
  local k = tonumber(ARGV[i + 1])
  local ts = {}
  for j = 1, k do ts[j] = topics[tonumber(ARGV[i + 1 + j])] end
  i = i + 2 + k
  local a = {}
  for j = 1, kind[2] do a[j] = ARGV[i + j - 1] end
  i = i + kind[2]
  out[#out + 1] = kind[1](ts, a)
end
return out
