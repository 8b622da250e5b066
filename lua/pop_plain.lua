-- pop_plain: a reserve of one topic's next job on issue 50's plain path
-- (pool/plain.go; lib_plain.lua), as push_plain.lua is a push's: the same
-- writes as batch.lua's pop of the same topic (pool
-- TestPlainPathAgreesWithBatch). It takes the topic's head (the lowest
-- priority, then the lowest member), reserves it until now + its TTR
-- (deletes it, a TTR of 0), nudges the bucket's timer to that time and answers as a batch of one
-- pop: {{OK, more, the job's reply (contract.lua reply)}, {TOTALS, ...}},
-- or {{EMPTY, -1, '', ''}} when the topic has no ready job. more (1: the
-- topic has more ready jobs) is said only when the pop asks (A.more '1').
-- plain.refusal's, having changed nothing, when batch.lua must pop: the
-- bucket has settings; the topic is paused, was ever given a job that
-- expires, or is a fanout child; its head is a TTR 0 job whose end someone
-- hears of, or has no record (plain.take) (put back where it was).
-- KEYS: the bucket's, then the topic's. ARGV: the caller, then A's names.
local function main()
  if plain.settings() then return plain.refusal('settings') end
  local name = ARGV[A.topic]
  if plain.child(name) then return plain.refusal('topic', name) end
  local t = topic_keys(1, name)
  local now = plain.now()
  if not plain.open(t, now) then return plain.refusal('topic', name) end
  local member, job = plain.take(t)
  if job == true then return plain.refusal('job') end
  if not member then return {REPLY.pop.EMPTY(-1, '', '')} end
  return {REPLY.pop.OK(plain.reserve(t, member, job, now, ARGV[A.more])),
    REPLY.batch_extra.TOTALS(K_STATS, 'total_reserves', 1, t.info, 'total_reserves', 1)}
end
return main()
