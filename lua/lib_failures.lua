-- lib_failures.lua, after lib_jobs.lua (see lib.lua): retry policies, backoff and the dead.

-- Failures (issue 12). retry_policy is job's policy: its topic's settings
-- (max_attempts, backoff, backoff_base, backoff_max in seconds,
-- backoff_jitter) under the job's own (F_RETRY: five words, max attempts,
-- backoff, base ms, max ms, jitter 0/1, each '-' to keep the topic's).
--
-- max_attempts is 25 when no layer sets it (asynq's and Sidekiq's choice): a
-- job that keeps failing ends in the dead set rather than being retried for
-- ever; 0, set explicitly, still means for ever (job.DefaultMaxAttempts).
-- The constant is in retry_policy's block: the library's main function
-- holds at most 200 locals.
local retry_policy
do
local DEFAULT_MAX_ATTEMPTS = '25'
function retry_policy(t, job)
  local cfg = topic_config(t)
  local p = {max_attempts = tonumber(cfg.max_attempts or DEFAULT_MAX_ATTEMPTS), backoff = cfg.backoff or 'exponential',
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

-- fail_record counts a failure of job with its error, kept as its last
-- error and in its errors (issue 49): the last KEPT failures' (F_ERRORS,
-- in its record, so they go wherever the job goes, and with it), each with
-- its attempt and time (now_ms), its error cut to BYTES (cut_text: not
-- inside a UTF-8 character; job.ErrorsKept, job.ErrorBytes). A fail that
-- gives no error keeps job.NoReason. A store below format 3 keeps the last
-- error only: its brokers may read neither a record with a hole (F_ERRORS
-- past an absent F_BODY) nor a field they do not know. (Its constants are its own locals: the library's main holds
-- at most 200.)
local function fail_record(t, job, err)
  local KEPT, BYTES = 10, 1024
  if err == '' then err = '(no reason given)' end
  err = cut_text(err, BYTES)
  job[F_FAILURES] = (job[F_FAILURES] or 0) + 1
  job[F_LAST_ERROR] = err
  if jobbody.format >= 3 then -- every broker of a store at 3 reads a record with a hole and skips a field it does not know
    local kept = job[F_ERRORS] and cjson.decode(job[F_ERRORS]) or {}
    kept[#kept + 1] = {job[F_RESERVES] or 0, now_ms(), err}
    while #kept > KEPT do table.remove(kept, 1) end
    job[F_ERRORS] = cjson.encode(kept)
  end
  count('total_failures', 1)
  count_topic(t, 'total_failures', 1)
end

-- drop_dead removes a dead job of topic t for good (past dead_retention or
-- max_dead), counted as dead_dropped; its client id goes to dropped_cids.
local function drop_dead(t, member)
  local job = load(member)
  redis.call('ZREM', t.dead, member)
  redis.call('HDEL', K_JOBS, member)
  jobbody.drop(member, job)
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
-- dead_retention and keeps the set within max_dead. It returns the job's
-- on_dead follow-ups (F_ON_DEAD, nil: none), which its caller keeps
-- (outcomes.follow_up): they are taken off the job, so a dead job retried
-- that dies again pushes none.
local function kill(t, member, job, from, now)
  local on_dead = job[F_ON_DEAD]
  job[F_ON_DEAD] = nil
  announce_end(member, job, 'dead')
  note(t, member, job, 'dead', job[F_LAST_ERROR])
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
  return on_dead
end

-- revive makes a dead job ready again with its failures forgotten (a retry
-- from the dead set, or a kick).
local function revive(t, member, job)
  redis.call('ZREM', t.dead, member)
  job[F_FAILURES] = 0
  job[F_DEAD_AT] = 0
  note(t, member, job, 'dead_retried')
  make_ready(t, member, job)
  move_state(DEAD, READY)
  save(member, job)
  wake(t, 1)
end
