-- ack_plain: a consumer's ack (or delete) of the job it holds, on issue
-- 50's plain path (pool/plain.go; lib_plain.lua), as push_plain.lua is a
-- push's: the same writes as batch.lua's delete of the same job (pool
-- TestPlainPathAgreesWithBatch). It removes a reserved job that nothing
-- else waits on (plain.ackable): out of its topic's reserved set, its
-- record and body gone, its bytes and the bucket's count of reserved jobs
-- lowered. It answers as a batch of one delete: {{OK, the job's client
-- id, '', 0}, {TOTALS, ...}}; plain.refusal's, having changed nothing,
-- when the bucket has settings or the job is not one it simply deletes
-- (batch.lua answers or ends it).
-- KEYS: the bucket's, then the topic's. ARGV: the caller, then A's names.
local function main()
  if plain.settings() then return plain.refusal('settings') end
  local name, member = ARGV[A.topic], ARGV[A.member]
  if plain.child(name) then return plain.refusal('topic', name) end
  local record = redis.call('HGET', K_JOBS, member)
  local job = record and cmsgpack.unpack(record)
  if not plain.ackable(job, name, tonumber(ARGV[A.attempt])) then return plain.refusal('job') end
  local t = topic_keys(1, name)
  plain.delete(t, member, job)
  return {REPLY.ack.OK(job[F_CID], '', 0), REPLY.batch_extra.TOTALS(K_STATS, 'total_deletes', 1, t.info, 'total_deletes', 1)}
end
return main()
