-- lib_plain.lua, after lib_lean.lua: the helpers of issue 50's plain path
-- (push_plain.lua, pop_plain.lua, ack_plain.lua, ack_pop_plain.lua;
-- pool/plain.go). Those scripts run without begin and flush, so these
-- keep nothing of a call: each writes with redis.call as it goes and reads
-- Redis's clock itself. They do what lib_jobs.lua's push_job,
-- reserve_record and delete_job and lib.lua's flush do for a job of a
-- topic that uses no feature, and nothing else (pool
-- TestPlainPathAgreesWithBatch). A table: the library's main function
-- holds at most 200 locals.
local plain = {}
do
  -- plain.refusal is the reply of a plain script that leaves the call to
  -- batch.lua, having changed nothing: {{GENERAL, why, the topic it is
  -- about}} ('settings': the bucket's; 'topic': a topic's pops; 'job':
  -- this call's job alone). pool/plain.go reads why.
  function plain.refusal(why, topic) return {REPLY.plain_refusal.GENERAL(why, topic or '')} end

  -- plain.settings says whether the bucket has settings: its defaults hash
  -- holds every default setting, topic pattern and mark (some topic has
  -- settings of its own, fanout children, groups), so a bucket without it
  -- has no topic that uses a feature.
  function plain.settings() return redis.call('EXISTS', K_DEFAULTS) == 1 end

  -- plain.child says whether topic name is a fanout child (batch.lua
  -- references those).
  function plain.child(name) return string.find(name, '+', 2, true) ~= nil end

  -- plain.now is Redis's clock, ms.
  function plain.now()
    local t = redis.call('TIME')
    return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end

  -- plain.open says whether topic t's head may be popped the plain way:
  -- not paused, and never given a job that expires (its pops sweep).
  function plain.open(t, now)
    local info = redis.call('HMGET', t.info, 'paused_until', 'expiring')
    return tonumber(info[1] or '0') <= now and not info[2]
  end

  -- plain.take takes topic t's head out of its ready set and returns its
  -- member and job; nil when none is ready; nil and true, having put it
  -- back where it was, when it has no record, or is one a reserve deletes
  -- (TTR 0) whose end someone hears of (a waiter, dependents, a batch) or
  -- that leaves an index (an expiry, a group): batch.lua's lib_jobs.lua
  -- reserve_record ends those.
  function plain.take(t)
    local head = redis.call('ZPOPMIN', t.ready)
    local member = head[1]
    if not member then return nil end
    local record = redis.call('HGET', K_JOBS, member)
    local job = record and cmsgpack.unpack(record)
    if not job or (job[F_TTR] == 0 and (job[F_WAITED] or job[F_DEPENDENTS] or job[F_BATCH] or
      (job[F_EXPIRES] or 0) > 0 or (job[F_GROUP] or '') ~= '')) then
      redis.call('ZADD', t.ready, head[2], member)
      return nil, true
    end
    return member, job
  end

  -- plain.reserve reserves job (member, just taken from topic t's ready
  -- set, by plain.take) until now + its TTR, nudges the bucket's timer to
  -- then, and returns what the pop's reply takes (REPLY.pop.OK): more (1: t
  -- has more ready jobs, said only when asked), then the job's reply. A job of
  -- TTR 0 is taken: deleted as it is delivered (state 0). swapped: the call
  -- deleted a reserved job too and this one is reserved, so the bucket's
  -- count of reserved jobs stays as it is (batch.lua's flush sums the two
  -- moves, and writes none).
  function plain.reserve(t, member, job, now, ask_more, swapped)
    local body = false -- the record holds it
    if job[F_BODY] == nil then body = redis.call('HGET', K_BODIES, member) end
    job[F_RESERVES] = job[F_RESERVES] + 1
    redis.call('HINCRBY', K_STATS, STATE_COUNTER[READY], -1)
    local packed
    if job[F_TTR] == 0 then
      job[F_STATE] = 0
      redis.call('HDEL', K_JOBS, member)
      if job[F_BODY] == nil then redis.call('HDEL', K_BODIES, member) end
      local size = job[F_SIZE] or 0
      if size > 0 then redis.call('HINCRBY', t.info, 'bytes', -size) end
      packed = cmsgpack.pack(job)
    else
      job[F_STATE] = RESERVED
      job[F_DUE] = now + job[F_TTR]
      redis.call('ZADD', t.reserved, job[F_DUE], member)
      packed = cmsgpack.pack(job)
      redis.call('HSET', K_JOBS, member, packed)
      if not swapped then redis.call('HINCRBY', K_STATS, STATE_COUNTER[RESERVED], 1) end
      redis.call('ZADD', K_DUE, 'LT', job[F_DUE], t.name)
    end
    local more = 0
    if ask_more == '1' and redis.call('ZCARD', t.ready) > 0 then more = 1 end
    return more, reply(member, job, body, now, packed)
  end

  -- plain.ackable says whether job (its record read, or nil) is one an ack
  -- of topic name at attempt (0: unfenced) simply deletes: reserved by
  -- that delivery, and nothing else to do at its end (kept completed by
  -- its own keep_completed, follow-ups, dependents, a batch, a waiter, an
  -- expiry to unindex, a group's slot, a cancel asked).
  function plain.ackable(job, name, attempt)
    return job and job[F_TOPIC] == name and job[F_STATE] == RESERVED and
      (attempt == 0 or attempt == job[F_RESERVES]) and (job[F_KEEP] or 0) <= 0 and not job[F_THEN] and
      not job[F_DEPENDENTS] and not job[F_BATCH] and not job[F_WAITED] and (job[F_EXPIRES] or 0) <= 0 and
      (job[F_GROUP] or '') == '' and not job[F_CANCEL]
  end

  -- plain.delete removes a reserved job (member, of topic t) that
  -- plain.ackable allowed; swapped as plain.reserve's.
  function plain.delete(t, member, job, swapped)
    redis.call('ZREM', t.reserved, member)
    redis.call('HDEL', K_JOBS, member)
    if job[F_BODY] == nil then redis.call('HDEL', K_BODIES, member) end
    if not swapped then redis.call('HINCRBY', K_STATS, STATE_COUNTER[RESERVED], -1) end
    local size = job[F_SIZE] or 0
    if size > 0 then redis.call('HINCRBY', t.info, 'bytes', -size) end
  end
end
