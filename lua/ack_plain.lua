-- ack_plain: a consumer's ack (or delete) of the job it holds, on issue
-- 50's plain path (pool/plain.go), as push_plain.lua is a push's: no
-- per-call state, and the same writes as batch.lua's delete of the same
-- job (pool TestPlainPathAgreesWithBatch). It removes a reserved job that
-- nothing else waits on: out of its topic's reserved set, its record and
-- body gone, its bytes and the bucket's count of reserved jobs lowered.
-- It answers as a batch of one delete: {{OK, the job's client id, '', 0}},
-- then {TOTALS, ...}.
--
-- {{GENERAL, why}}, having changed nothing, when batch.lua must end the
-- job: 'settings', the bucket's defaults hash exists (push_plain.lua);
-- 'job', the job is not one this ack simply deletes (gone, another
-- topic's, another delivery's, not reserved, kept completed by its own
-- keep_completed, with follow-ups, dependents, a batch, a waiter, an
-- expiry, a group or a cancel asked): batch.lua answers or ends it.
--
-- KEYS: the bucket's, then the topic's. ARGV: the caller, then A's names.
local function main()
  if redis.call('EXISTS', K_DEFAULTS) == 1 then return {{R.GENERAL, 'settings'}} end
  local name, member = ARGV[A.topic], ARGV[A.member]
  if string.find(name, '+', 2, true) then return {{R.GENERAL, 'topic'}} end
  local record = redis.call('HGET', K_JOBS, member)
  local job = record and cmsgpack.unpack(record)
  local attempt = tonumber(ARGV[A.attempt])
  if not job or job[F_TOPIC] ~= name or job[F_STATE] ~= RESERVED or (attempt > 0 and attempt ~= job[F_RESERVES]) or
    (job[F_KEEP] or 0) > 0 or job[F_THEN] or job[F_DEPENDENTS] or job[F_BATCH] or job[F_WAITED] or
    (job[F_EXPIRES] or 0) > 0 or (job[F_GROUP] or '') ~= '' or job[F_CANCEL] then
    return {{R.GENERAL, 'job'}}
  end
  local t = topic_keys(1, name)
  redis.call('ZREM', t.reserved, member)
  redis.call('HDEL', K_JOBS, member)
  if job[F_BODY] == nil then redis.call('HDEL', K_BODIES, member) end
  redis.call('HINCRBY', K_STATS, STATE_COUNTER[RESERVED], -1)
  local size = job[F_SIZE] or 0
  if size > 0 then redis.call('HINCRBY', t.info, 'bytes', -size) end
  return {{R.OK, job[F_CID], '', 0},
    {R.TOTALS, K_STATS, 'total_deletes', 1, t.info, 'total_deletes', 1}}
end
return main()
