-- push_plain: one job's push on issue 50's plain path (pool/plain.go;
-- lib_plain.lua), for a bucket where no topic uses a setting: the data
-- model's commands and a settings check, none of batch.lua's operations,
-- phases, refusals or per-call tables. It writes what batch.lua writes for
-- the same push (pool TestPlainPathAgreesWithBatch): the record (its body
-- in it up to jobbody.INLINE in store format 2, else in the bodies hash),
-- the ready or delayed set (a delayed one's due hint), the bucket's
-- current count, the topic's bytes and total_jobs (its registration the
-- first time: lib_topics.lua count_pushes), and the wake-up of brokers
-- whose consumers wait on the topic. Its reply is a batch's of one push:
-- {{OK, now, due, 1}, {TOTALS, ...}} or {{EXISTS}}, the member being taken;
-- plain.refusal's when the bucket has settings or the topic is a fanout
-- child.
-- KEYS: the bucket's, then the topic's (contract.lua topic_keys).
-- ARGV: the caller ('origin/format'), then A's names (lua.ScriptArgs).
local function main()
  if plain.settings() then return plain.refusal('settings') end
  local name, member, body = ARGV[A.topic], ARGV[A.member], ARGV[A.body]
  if plain.child(name) then return plain.refusal('topic', name) end
  local origin, format = caller_of(ARGV)
  local t = topic_keys(1, name)
  local now = plain.now()
  local job = OP_ARGS.push.record(ARGV, 0, A, name, now)
  -- The member checked and the record written by one command where the
  -- record holds the body; a body kept apart is written only once the
  -- member is known to be free.
  if format >= 2 and #body <= jobbody.INLINE then
    job[F_BODY] = body
    if redis.call('HSETNX', K_JOBS, member, cmsgpack.pack(job)) == 0 then return {REPLY.push.EXISTS()} end
  else
    if redis.call('HEXISTS', K_JOBS, member) == 1 then return {REPLY.push.EXISTS()} end
    redis.call('HSET', K_BODIES, member, body)
    redis.call('HSET', K_JOBS, member, cmsgpack.pack(job))
  end
  local ready = job[F_STATE] == READY
  if ready then
    redis.call('ZADD', t.ready, job[F_PRI], member)
  else
    redis.call('ZADD', t.delayed, job[F_DUE], member)
    redis.call('ZADD', K_DUE, 'LT', job[F_DUE], name)
  end
  redis.call('HINCRBY', K_STATS, STATE_COUNTER[job[F_STATE]], 1)
  if redis.call('HINCRBY', t.info, 'total_jobs', 1) == 1 and add_topic(t) then -- registered (lib_topics.lua count_pushes)
    -- created's note of its birth, its count written now: a bucket
    -- without settings schedules no max_queue_age check
    if redis.call('HSETNX', t.info, 'created', now) == 1 then redis.call('HINCRBY', K_STATS, 'queue_creates', 1) end
  end
  if #body > 0 then redis.call('HINCRBY', t.info, 'bytes', #body) end
  if ready then
    local channel = redis.call('GET', t.waiting)
    if channel then redis.call('PUBLISH', channel, origin .. ' 1 ' .. name) end
  end
  return {REPLY.push.OK(now, job[F_DUE], 1), REPLY.batch_extra.TOTALS(K_STATS, 'total_jobs', 1)}
end
return main()
