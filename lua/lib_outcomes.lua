-- lib_outcomes.lua, after lib_failures.lua (see lib.lua): how a job ends
-- when its topic keeps outcomes (store format 3). An ack on a topic with
-- keep_completed > 0 (or of a job pushed with its own keep_completed), or
-- an ack that gives a result (keep_results, an hour when unset)
-- completes the job instead of deleting it: it stays, with the ack's result,
-- in its topic's completed set, scored by when it is to be removed, until
-- the bucket timer removes it (tick.lua) or the topic's max_completed makes
-- room. A completed job counts in no limit a pending one does (max_items,
-- max_size, bytes): it is history, bounded by its own settings.
-- A table, not locals: the library's main function holds at most 200.
local outcomes = {}
do
  -- DEFAULT_MAX_COMPLETED, DEFAULT_MAX_RESULT: the settings unset
  -- (job.DefaultMaxCompleted, job.DefaultMaxResult; TestOutcomeDefaults).
  local DEFAULT_MAX_COMPLETED, DEFAULT_MAX_RESULT = '10000', '16384'
  -- DEFAULT_KEEP_RESULTS: keep_results unset, seconds (job.DefaultKeepResults).
  local DEFAULT_KEEP_RESULTS = '3600'
  -- TRIM_STEP is the most completed jobs one completion removes to keep its
  -- topic within max_completed: a lowered cap is reached a step at a time.
  local TRIM_STEP = 100

  -- outcomes.keep is how long (ms) job is kept once completed, by an ack
  -- with result ('' or nil: none): its own keep_completed (0 too: its
  -- producer said), else its topic's keep_completed when above 0 (it wins,
  -- shorter or not), else, for an ack that gives a result, its topic's
  -- keep_results; 0 deletes it at its ack. An ack without a result reads
  -- no more than it did before keep_results. A store below format 3 is
  -- written for brokers that know no completed state.
  function outcomes.keep(t, job, result)
    if jobbody.format < 3 then return 0 end
    local s = job[F_KEEP]
    if s == nil then
      local cfg = topic_config(t)
      s = tonumber(cfg.keep_completed or '0')
      if s <= 0 and result and result ~= '' then s = tonumber(cfg.keep_results or DEFAULT_KEEP_RESULTS) end
    end
    return math.max(s, 0) * 1000
  end

  -- outcomes.left is how long (ms) topic t's completed job member is still
  -- kept (0: not in its completed set): a retried ack's answer.
  function outcomes.left(t, member)
    local at = redis.call('ZSCORE', t.completed, member)
    if not at then return 0 end
    return math.max(tonumber(at) - now_ms(), 0)
  end

  -- outcomes.max_result is topic t's max_result, bytes.
  function outcomes.max_result(t)
    return tonumber(topic_config(t).max_result or DEFAULT_MAX_RESULT)
  end

  -- outcomes.drop removes a completed job (or one of state) of topic t for
  -- good (its time was up, or max_completed made room); its client id goes
  -- to dropped_cids, to be dropped by the caller.
  function outcomes.drop(t, member, state)
    state = state or COMPLETED
    local job = load(member)
    redis.call('ZREM', t[STATE_SET[state]], member)
    redis.call('HDEL', K_JOBS, member)
    jobbody.drop(member, job)
    move_state(state, nil)
    if job and (job[F_CID] or '') ~= '' then
      dropped_cids[#dropped_cids + 1] = member
      dropped_cids[#dropped_cids + 1] = job[F_CID]
    end
  end

  -- outcomes.trim removes topic t's completed jobs (or those of state,
  -- cancelled) past its max_completed, those due to go first, at most
  -- TRIM_STEP.
  function outcomes.trim(t, state)
    state = state or COMPLETED
    local cap = tonumber(topic_config(t).max_completed or DEFAULT_MAX_COMPLETED)
    if cap <= 0 then return end
    local set = t[STATE_SET[state]]
    local over = redis.call('ZCARD', set) - cap
    if over <= 0 then return end
    for _, member in ipairs(redis.call('ZRANGE', set, 0, math.min(over, TRIM_STEP) - 1)) do
      outcomes.drop(t, member, state)
    end
  end

  -- outcomes.complete moves job (member, of topic t, its slot freed) to the
  -- completed set with result ('' none), to be removed keep ms from now.
  -- Its record and set entry are written at once, not through write: a
  -- trim may remove this very job, and a gathered write would bring it back.
  function outcomes.complete(t, member, job, result, keep, write)
    local now = now_ms()
    remove_from_state(t, member, job, write)
    drop_bytes(t, job)
    unindex_expiry(t, member, job, write)
    move_state(job[F_STATE], COMPLETED)
    count('total_deletes', 1)
    count_topic(t, 'total_deletes', 1)
    count('total_completed', 1)
    count_topic(t, 'total_completed', 1)
    job[F_STATE], job[F_DUE], job[F_ENDED_AT] = COMPLETED, 0, now
    if result ~= '' then job[F_RESULT] = result end
    note(t, member, job, 'completed')
    redis.call('HSET', K_JOBS, member, cmsgpack.pack(job))
    redis.call('ZADD', t.completed, now + keep, member)
    schedule(t, now + keep)
    outcomes.trim(t)
  end

  -- outcomes.sweep removes up to n of topic t's completed jobs, and up to
  -- n of its cancelled ones, whose time is up (a bucket timer's tick).
  function outcomes.sweep(t, now, n)
    for _, member in ipairs(redis.call('ZRANGEBYSCORE', t.completed, '-inf', now, 'LIMIT', 0, n)) do
      outcomes.drop(t, member)
    end
    for _, member in ipairs(redis.call('ZRANGEBYSCORE', t.cancelled, '-inf', now, 'LIMIT', 0, n)) do
      outcomes.drop(t, member, CANCELLED)
    end
  end

  -- outcomes.cancel ends job (member, of topic t; a reserved one's slot
  -- freed by the caller) cancelled: kept in its topic's cancelled set as a
  -- completed job would be (its keep_completed, or its topic's), or, kept
  -- for no time, removed. Its end is announced. It returns the client id
  -- to drop ('' when the job stays, or has none).
  function outcomes.cancel(t, member, job)
    local now = now_ms()
    announce_end(member, job, 'cancelled')
    remove_from_state(t, member, job)
    drop_bytes(t, job)
    unindex_expiry(t, member, job)
    count('total_cancelled', 1)
    count_topic(t, 'total_cancelled', 1)
    local keep = outcomes.keep(t, job)
    if keep <= 0 then
      move_state(job[F_STATE], nil)
      redis.call('HDEL', K_JOBS, member)
      jobbody.drop(member, job)
      job[F_STATE] = 0
      return job[F_CID] or ''
    end
    move_state(job[F_STATE], CANCELLED)
    job[F_STATE], job[F_DUE], job[F_ENDED_AT], job[F_CANCEL] = CANCELLED, 0, now, nil
    note(t, member, job, 'cancelled')
    save(member, job)
    redis.call('ZADD', t.cancelled, now + keep, member)
    schedule(t, now + keep)
    outcomes.trim(t, CANCELLED)
    return ''
  end
end

-- outcomes.again makes a completed or cancelled job of topic t ready again
-- (pushed again from its set): its result, progress, log and failures
-- forgotten (its history kept), its attempts counted on (an ack of an earlier delivery stays
-- stale).
function outcomes.again(t, member, job)
  local from = job[F_STATE]
  redis.call('ZREM', t[STATE_SET[from]], member)
  job[F_ENDED_AT], job[F_RESULT], job[F_FAILURES], job[F_DEAD_AT] = nil, nil, 0, 0
  job[F_PROGRESS], job[F_LOG], job[F_CANCEL] = nil, nil, nil -- a run afresh (its history stays)
  note(t, member, job, 'pushed_again')
  move_state(from, READY)
  make_ready(t, member, job)
  add(t.info, 'bytes', job[F_SIZE] or 0) -- counted again, as pending
  save(member, job)
  wake(t, 1)
end

-- outcomes.follow_up keeps follow-ups (entries: the JSON [[id, spec], ...]
-- the pool wrote, an ack's push or a job's F_THEN or F_ON_DEAD) in the
-- bucket's follow-ups (K_FOLLOWUPS: id -> ms due; K_FOLLOWUP_SPECS: id ->
-- spec) for its timer to push (pool/followups.go) from due (ms). A completion's
-- result (a JSON value's compact text, '' none) goes into each spec (a
-- JSON object, its "result" added at its end, unread), for those that take
-- it (with_result). It appends each id and spec as kept to out.
function outcomes.follow_up(entries, due, result, out)
  for _, e in ipairs(cjson.decode(entries)) do
    local spec = e[2]
    if result ~= '' then spec = string.sub(spec, 1, -2) .. ',"result":' .. result .. '}' end
    redis.call('HSET', K_FOLLOWUP_SPECS, e[1], spec)
    redis.call('ZADD', K_FOLLOWUPS, due, e[1])
    out[#out + 1] = e[1]
    out[#out + 1] = spec
  end
  redis.call('ZADD', K_DUE, 'LT', due, '@followups') -- pool/followups.go followupsDue
end
