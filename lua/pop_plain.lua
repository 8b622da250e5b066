-- pop_plain: a reserve of one topic's next job on issue 50's plain path
-- (pool/plain.go), as push_plain.lua is a push's: no per-call state, and
-- the same writes as batch.lua's pop of the same topic (pool
-- TestPlainPathAgreesWithBatch). It takes the topic's head (the lowest
-- priority, then the lowest member), reserves it until now + its TTR,
-- nudges the bucket's timer to that time and answers as a batch of one
-- pop: {{OK, more, the job's reply (contract.lua reply)}, {TOTALS, ...}},
-- or {{EMPTY, -1, '', ''}} when the topic has no ready job. more (1: the
-- topic has more ready jobs) is said only when the pop asks (A.more '1').
--
-- {{GENERAL, why}}, having changed nothing, when batch.lua must pop:
-- 'settings', the bucket's defaults hash exists (push_plain.lua); 'topic',
-- the topic is paused or was ever given a job that expires (its pops
-- sweep); 'job', its head is one a reserve deletes (TTR 0) or has no
-- record: the head is put back where it was.
--
-- KEYS: the bucket's, then the topic's. ARGV: the caller, then A's names.
local function main()
  if redis.call('EXISTS', K_DEFAULTS) == 1 then return {{R.GENERAL, 'settings'}} end
  local name = ARGV[A.topic]
  if string.find(name, '+', 2, true) then return {{R.GENERAL, 'topic'}} end -- a fanout child: batch.lua references it
  local t = topic_keys(1, name)
  local clock = redis.call('TIME')
  local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
  local info = redis.call('HMGET', t.info, 'paused_until', 'expiring')
  if tonumber(info[1] or '0') > now or info[2] then return {{R.GENERAL, 'topic'}} end
  local head = redis.call('ZPOPMIN', t.ready)
  local member = head[1]
  if not member then return {{R.EMPTY, -1, '', ''}} end
  local record = redis.call('HGET', K_JOBS, member)
  local job = record and cmsgpack.unpack(record)
  if not job or job[F_TTR] == 0 then
    redis.call('ZADD', t.ready, head[2], member) -- back where it was
    return {{R.GENERAL, 'job'}}
  end
  local body = false -- the record holds it
  if job[F_BODY] == nil then body = redis.call('HGET', K_BODIES, member) end
  job[F_RESERVES] = job[F_RESERVES] + 1
  job[F_STATE] = RESERVED
  job[F_DUE] = now + job[F_TTR]
  redis.call('ZADD', t.reserved, job[F_DUE], member)
  local packed = cmsgpack.pack(job)
  redis.call('HSET', K_JOBS, member, packed)
  redis.call('HINCRBY', K_STATS, STATE_COUNTER[READY], -1)
  redis.call('HINCRBY', K_STATS, STATE_COUNTER[RESERVED], 1)
  redis.call('ZADD', K_DUE, 'LT', job[F_DUE], name)
  local more = 0
  if ARGV[A.more] == '1' and redis.call('ZCARD', t.ready) > 0 then more = 1 end
  local r = reply(member, job, body, now, packed)
  return {{R.OK, more, r[1], r[2], r[3], r[4]},
    {R.TOTALS, K_STATS, 'total_reserves', 1, t.info, 'total_reserves', 1}}
end
return main()
