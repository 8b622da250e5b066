-- lib_limits.lua, after lib_failures.lua (see lib.lua): a topic's rate and
-- concurrency limits, which every pop obeys (batch.lua choose), whichever
-- front end and broker asks.
--   rate, burst: a token bucket of burst tokens (1 when unset) that fills at
--     rate tokens a second; a delivery takes one. Its state is two fields of
--     the topic's info hash, 'tokens' and 'tokens_at' (ms), written when a
--     pop takes tokens: the level at any other instant follows from them.
--   max_reserved: at most this many of the topic's jobs reserved at once.
-- A pop held back by a limit while the topic has ready jobs counts in the
-- topic's 'total_limited'; held back by the rate, it says when the next token
-- comes (the EMPTY reply's wait, so a waiting consumer's timer wakes it
-- then); held back by max_reserved, it waits for a job to leave the reserved
-- set, which wakes one waiting consumer (free_slot).
-- (limits_of, the per-call state of this file, is lib.lua's.)

-- limits returns topic t's limits for this call: {rate (tokens a second, 0:
-- none), burst, most (max_reserved, 0: none), tokens (the level at the
-- call's start, when rate > 0), reserved (when most > 0), picked (jobs this
-- call's pops took), reserving (those of them reserved)}, or false when it
-- has none. tokens and tokens_at are the topic's info fields, which the
-- caller reads with its others.
local function limits(t, tokens, tokens_at, now)
  local l = limits_of[t.name]
  if l ~= nil then return l end
  local cfg = topic_config(t)
  local rate, most = tonumber(cfg.rate or '0'), tonumber(cfg.max_reserved or '0')
  if rate <= 0 and most <= 0 then
    limits_of[t.name] = false
    return false
  end
  l = {info = t.info, rate = rate, burst = math.max(tonumber(cfg.burst or '1'), 1), most = most, picked = 0,
       reserving = 0}
  if rate > 0 then
    local at = tonumber(tokens_at or '0')
    if at == 0 then
      l.tokens = l.burst
    else
      l.tokens = math.min(l.burst, tonumber(tokens or '0') + math.max(now - at, 0) * rate / 1000)
    end
  end
  if most > 0 then l.reserved = redis.call('ZCARD', t.reserved) end
  limits_of[t.name] = l
  return l
end

-- room says how many jobs topic t's limits let a pop take now (math.huge:
-- no limit), and, when that is none, how many ms until the rate lets one
-- more go (-1: not by time: a job must leave the reserved set first). take
-- says the pop removes its jobs as it delivers them (they are never
-- reserved, so max_reserved does not hold them back).
local function room(l, take)
  if not l then return math.huge, -1 end
  local n, wait = math.huge, -1
  if l.most > 0 and not take then n = l.most - l.reserved - l.reserving end
  if l.rate > 0 then
    local tokens = l.tokens - l.picked
    -- At most a day: a rate's wait past that is one more look, no harm.
    if n > 0 and tokens < 1 then wait = math.min(math.ceil((1 - tokens) * 1000 / l.rate), 86400000) end
    n = math.min(n, math.floor(tokens))
  end
  return math.max(n, 0), wait
end

-- took notes that a pop took n of topic t's jobs (reserved ones count
-- against max_reserved; take's do not).
local function took(l, n, take)
  if not l then return end
  l.picked = l.picked + n
  if not take then l.reserving = l.reserving + n end
end

-- spend writes each limited topic's tokens after this call's pops took some.
local function spend(now)
  for _, l in pairs(limits_of) do
    if l and l.rate > 0 and l.picked > 0 then
      redis.call('HSET', l.info, 'tokens', tostring(l.tokens - l.picked), 'tokens_at', now)
    end
  end
end

-- free_slot is told that job, of topic t, left its reserved set (acked,
-- deleted, failed, released, buried, flushed, or its TTR ran out): its
-- group's count goes down (lib_groups.lua), and with max_reserved or
-- group_max_reserved set, a waiting consumer may now take the next job.
local function free_slot(t, job)
  groups.reserved(t, job[F_GROUP] or '', -1)
  local cfg = topic_config(t)
  if tonumber(cfg.max_reserved or '0') > 0 or tonumber(cfg.group_max_reserved or '0') > 0 then
    wake(t, 1)
    wakes[t.name][3] = true -- the calling broker's consumers too: it does not know
  end
end

-- cancel_held ends a reserved job whose cancel was asked (F_CANCEL) when
-- its consumer next touches, acks, releases, buries or fails it, or its
-- TTR runs out: cancelled (lib_outcomes.lua), its slot freed. It returns
-- nil for a job not marked, else the reply {'CANCELLED', client id to drop,
-- the members and client ids of the cancelled jobs max_completed dropped
-- to make room, space-separated}.
local function cancel_held(t, member, job)
  if job[F_STATE] ~= RESERVED or not job[F_CANCEL] then return nil end
  redis.call('ZREM', t.reserved, member)
  free_slot(t, job)
  local before = #dropped_cids
  local cid = outcomes.cancel(t, member, job)
  return REPLY.job_call.CANCELLED(cid, table.concat(dropped_cids, ' ', before + 1))
end

-- ack_record is the record an ack or delete of member reads: record (read
-- when the call began), unless an earlier one of the call ended the job
-- (gone[member]): deleted, none; completed, the record as it is now.
local function ack_record(gone, member, record)
  local was = gone[member]
  if not was then return record end
  if was == 'kept' then return redis.call('HGET', K_JOBS, member) end
end

-- ack_job ends the job of topic t a delete or an ack names (member, its
-- record as read, nil when there is none; attempt, 0: unfenced; mode:
-- 'ack' completes it when it is kept (lib_outcomes.lua), with result ('':
-- none), '' deletes it, 'unreserved' deletes it unless it is reserved),
-- freeing its slot, its writes through write: both of batch.lua's paths.
-- An ack of a job with follow-ups of its own (F_THEN) is followups.lua's,
-- which has their keys and passes follow (called with them once the job is
-- done); without it, the ack is refused {'THEN'}, before any write, and
-- the pool asks followups.lua.
-- It returns the client id to drop ('' none, or when the job stays), then
-- nil or the refusal the operation answers, then true when the job stays,
-- completed, then the members and client ids of the completed jobs
-- max_completed dropped to make room, space-separated ('' none), then how
-- long (ms) the job is kept completed (0: not kept), which the ack answers.
-- (Here, after free_slot.)
local function ack_job(t, member, record, attempt, mode, result, write, follow)
  local job = record and cmsgpack.unpack(record)
  local refused = refusal(job, t.name, attempt)
  if not refused and (job[F_STATE] == COMPLETED or job[F_STATE] == CANCELLED) then
    if mode == 'ack' and job[F_STATE] == COMPLETED then return '', nil, true, '', outcomes.left(t, member) end -- a retried ack: done already
    if mode == 'ack' then refused = REPLY.job_call.CANCELLED('') end
    if mode == 'unreserved' then refused = REPLY.job_call.NOT_FOUND() end -- beanstalkd's delete: gone
  end
  if not refused and mode == 'unreserved' and job[F_STATE] == RESERVED then refused = REPLY.job_call.STATE(RESERVED) end
  -- A fenced ack names a delivery: of a job no longer reserved by it (it
  -- was released, or pushed again from the completed or cancelled set,
  -- its attempts not yet counted on) it changes nothing.
  if not refused and mode == 'ack' and attempt > 0 and job[F_STATE] ~= RESERVED and job[F_STATE] ~= COMPLETED
    and job[F_STATE] ~= CANCELLED then
    refused = REPLY.job_call.STATE(job[F_STATE])
  end
  local then_list = not refused and mode == 'ack' and job[F_STATE] ~= COMPLETED and job[F_STATE] ~= CANCELLED and job[F_THEN]
  if then_list and not follow then refused = REPLY.job_call.THEN() end
  local keep = 0
  if not refused and mode == 'ack' then
    keep = outcomes.keep(t, job, result)
    -- max_result holds whether the job is kept or not: a result goes on
    -- to its end's waiters, batch and events, and a consumer told 200 for
    -- one then dropped would never learn it was too big.
    local most = #result > 0 and outcomes.max_result(t)
    if most and #result > most then refused = REPLY.job_call.TOO_BIG(most, 'max_result') end
  end
  if refused then return nil, refused end
  if mode ~= '' and job[F_CANCEL] then -- an ack (or beanstalkd's delete) of a job cancelled meanwhile ends it cancelled
    local cancelled = cancel_held(t, member, job)
    if cancelled then return nil, cancelled end
  end
  if job[F_STATE] == RESERVED then free_slot(t, job) end
  if then_list then
    job[F_THEN] = nil -- a completed job pushed again pushes none
    follow(then_list)
  end
  if keep > 0 then
    local before = #dropped_cids
    announce_end(member, job, 'completed', result ~= '' and result or nil)
    outcomes.complete(t, member, job, result, keep, write)
    return '', nil, true, table.concat(dropped_cids, ' ', before + 1), keep
  end
  delete_job(t, member, job, write)
  announce_end(member, job, mode == 'ack' and 'acked' or 'deleted', mode == 'ack' and result ~= '' and result or nil)
  if mode == 'ack' and topic_config(t).events == 'true' then emit(t, member, job, 'completed', result) end -- not kept, but completed
  return job[F_CID], nil, false, '', 0
end
