-- tick.lua is a bucket timer's work for one topic: it expires jobs whose
-- time ran out (at most the topic's max_expire_sweep a round), moves up to n
-- due jobs to ready, delayed jobs whose time came and reservations whose TTR
-- ran out (those count a timeout), removes dead and completed jobs whose
-- time is up, then records the topic's exact next due time.
-- KEYS: the shared layout (contract.lua) with one topic.
-- ARGV: origin, topic, n. A job that dies keeps its on_dead in the
-- bucket's follow-ups (outcomes.follow_up).
-- Returns {moved, more (1 if due work remains), then the member and client
-- id of each expired job that had one}.
local t = topic_keys(1, ARGV[A.topic])
local n = tonumber(ARGV[A.n])
local now = now_ms()
local moved = 0

-- Expiry first, so that a delayed job that expired is not made ready.
local sweep, throttled = n, false
local cap = tonumber(topic_config(t).max_expire_sweep or '0')
if cap > 0 and cap < n then sweep, throttled = cap, true end
local swept = sweep_expired(t, now, sweep)
local more_expired = swept >= sweep -- more may be due now (not lib.lua's expiring, the topics to mark)

local due = redis.call('ZRANGEBYSCORE', t.delayed, '-inf', now, 'LIMIT', 0, n)
for _, member in ipairs(due) do
  local job = load(member)
  redis.call('ZREM', t.delayed, member)
  make_ready(t, member, job)
  move_state(DELAYED, READY)
  save(member, job)
end
moved = #due
if moved < n then
  -- A TTR that ran out is a failure ('ttr expired'): the job is ready again
  -- at once, as in beanstalkd (its consumer already took the TTR), or, past
  -- its retry policy's max_attempts, dead.
  local expired = redis.call('ZRANGEBYSCORE', t.reserved, '-inf', now, 'LIMIT', 0, n - moved)
  for _, member in ipairs(expired) do
    local job = load(member)
    local cancelled = cancel_held(t, member, job) -- cancelled while held: it ends so, not retried
    if cancelled then
      if cancelled[2] ~= '' then
        dropped_cids[#dropped_cids + 1] = member
        dropped_cids[#dropped_cids + 1] = cancelled[2]
      end
    else
      redis.call('ZREM', t.reserved, member)
      free_slot(t, job)
      job[F_TIMEOUTS] = job[F_TIMEOUTS] + 1
      fail_record(t, job, 'ttr expired')
      note(t, member, job, 'timed_out')
      local p = retry_policy(t, job)
      if p.max_attempts > 0 and job[F_FAILURES] >= p.max_attempts then
        local on_dead = kill(t, member, job, RESERVED, now)
        if on_dead then outcomes.follow_up(on_dead, now, '', {}) end
      else
        make_ready(t, member, job)
        move_state(RESERVED, READY)
        save(member, job)
        moved = moved + 1
      end
    end
  end
  if #expired > 0 then count('total_timeouts', #expired) end
end

-- Dead jobs older than the topic's dead_retention go, oldest first, a tick
-- batch at a time.
local keep = dead_retention(t)
if keep > 0 then
  for _, member in ipairs(redis.call('ZRANGEBYSCORE', t.dead, '-inf', now - keep, 'LIMIT', 0, n)) do
    drop_dead(t, member)
  end
end
-- Completed jobs whose time is up go, a tick batch at a time (lib_outcomes.lua).
outcomes.sweep(t, now, n)
if moved > 0 then wake(t, moved) end

local next_due = nil
local function earliest(ms)
  if ms and (not next_due or ms < next_due) then next_due = ms end
end
for _, set in ipairs({t.delayed, t.reserved, t.expires, t.dead, t.completed, t.cancelled}) do
  local head = redis.call('ZRANGE', set, 0, 0, 'WITHSCORES')
  local ms = tonumber(head[2])
  if ms and set == t.dead then
    if keep > 0 then ms = ms + keep else ms = nil end
  end
  -- A sweep cut short by max_expire_sweep goes on a second later (kestrel's
  -- expiration timer runs once a second), not at once.
  if ms and set == t.expires and more_expired and throttled then ms = math.max(ms, now + 1000) end
  earliest(ms)
end
-- max_queue_age: a topic that came to be longer ago than this is forgotten
-- once it is empty (and not paused), as kestrel expires a queue; a fanout
-- child stops getting copies then. Until it is empty it is looked at again
-- every second.
local max_queue_age = tonumber(topic_config(t).max_queue_age or '0')
if max_queue_age > 0 then
  local born = tonumber(redis.call('HGET', t.info, 'created') or '0')
  local at = born + max_queue_age * 1000
  if born > 0 and at <= now then
    if empty(t) and tonumber(redis.call('HGET', t.info, 'paused_until') or '0') <= now then
      forget(t)
      unreference(t) -- an aged fanout child stops getting copies
      count('queue_expires', 1)
      count('queue_deletes', 1)
      local out = REPLY.tick(moved, 0)
      for _, v in ipairs(dropped_cids) do out[#out + 1] = v end -- the sweep's, above
      return out
    end
    earliest(now + 1000)
  elseif born > 0 then
    earliest(at)
  end
end

-- The deferred due hints (make_ready's expiries) must not undercut the exact
-- time written here.
due_hints[t.name] = nil
if next_due then
  redis.call('ZADD', K_DUE, next_due, t.name)
else
  redis.call('ZREM', K_DUE, t.name)
end
local more = 0
if next_due and next_due <= now then more = 1 end
local out = REPLY.tick(moved, more)
for _, v in ipairs(dropped_cids) do out[#out + 1] = v end
return out
