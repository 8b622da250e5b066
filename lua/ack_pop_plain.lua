-- ack_pop_plain: an ack, then a reserve of one topic's next job, in one
-- call, on issue 50's plain path (pool/plain.go; lib_plain.lua): a
-- consumer's "done with that, give me the next" (HTTP's ack with next,
-- the Go client's worker loop), as ack_plain.lua and pop_plain.lua each
-- are, and the same writes as batch.lua's ack_pop (pool
-- TestPlainPathAgreesWithBatch). Everything that may send the call to
-- batch.lua is looked at before anything is written: the bucket's
-- settings, the job (plain.ackable), the popped topic (plain.open) and its
-- head (plain.take, which puts a head it cannot reserve back). It answers
-- as a batch of one ack_pop: {{OK, the job's client id, '', then the
-- pop's reply (OK, more, the job's reply; or EMPTY, -1, '', '')}, {TOTALS,
-- ...}}; plain.refusal's, having changed nothing.
-- KEYS: the bucket's, then the acked job's topic's, then the popped
-- topic's when it is another. ARGV: the caller, then A's names.
local function main()
  if plain.settings() then return plain.refusal('settings') end
  local name, member, popped = ARGV[A.topic], ARGV[A.member], ARGV[A.pop_topic]
  if plain.child(name) then return plain.refusal('topic', name) end
  if plain.child(popped) then return plain.refusal('topic', popped) end
  local record = redis.call('HGET', K_JOBS, member)
  local job = record and cmsgpack.unpack(record)
  if not plain.ackable(job, name, tonumber(ARGV[A.attempt])) then return plain.refusal('job') end
  local t = topic_keys(1, name)
  local pt = t
  if popped ~= name then pt = topic_keys(2, popped) end
  local now = plain.now()
  if not plain.open(pt, now) then return plain.refusal('topic', popped) end
  local next_member, next_job = plain.take(pt)
  if next_job == true then return plain.refusal('job') end
  local swapped = next_member ~= nil and next_job[F_TTR] > 0 -- one reserved job out, one in
  plain.delete(t, member, job, swapped)
  local totals = REPLY.batch_extra.TOTALS(K_STATS, 'total_deletes', 1, t.info, 'total_deletes', 1)
  if not next_member then return {REPLY.ack_pop.OK(job[F_CID], '', unpack(REPLY.pop.EMPTY(-1, '', ''))), totals} end
  for _, v in ipairs({K_STATS, 'total_reserves', 1, pt.info, 'total_reserves', 1}) do totals[#totals + 1] = v end
  local popped_reply = REPLY.pop.OK(plain.reserve(pt, next_member, next_job, now, ARGV[A.more], swapped))
  return {REPLY.ack_pop.OK(job[F_CID], '', unpack(popped_reply)), totals}
end
return main()
