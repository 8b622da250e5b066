-- cancel.lua cancels a job: a delayed, ready or buried one ends cancelled
-- at once (lib_outcomes.lua cancel: kept as a completed job would be, or
-- removed); a reserved one is marked (F_CANCEL), and ends cancelled at its
-- consumer's next touch, progress, ack, release, bury or fail, or when its
-- TTR runs out (lib_limits.lua cancel_held). An ended job (dead, completed,
-- cancelled) is refused.
-- KEYS: the shared layout (contract.lua) with the job's topic.
-- ARGV: origin, member, topic.
-- Returns {'OK', client id to drop, job reply... (the job as it is now:
-- state 0 when it was removed), the members and client ids of the cancelled
-- jobs max_completed dropped, space-separated} or {'NOT_FOUND'} / {'TOPIC', t} / {'STATE', state}.
local member = ARGV[A.member]
local t = topic_keys(1, ARGV[A.topic])
local job, err = fetch(member, ARGV[A.topic], 0)
if not job then return err end
local from = job[F_STATE]
if from == DEAD or from == COMPLETED or from == CANCELLED then return REPLY.job_call.STATE(from) end
local cid = ''
if from == RESERVED then
  if not job[F_CANCEL] then
    job[F_CANCEL] = 1
    note(t, member, job, 'cancel_asked')
    save(member, job)
  end
else
  cid = outcomes.cancel(t, member, job)
end
local m, body, now, record = reply(member, job, job[F_BODY] == nil and job[F_STATE] ~= 0 and jobbody.read(member, job), now_ms())
-- dropped: the cancelled jobs max_completed dropped, as member, client id pairs
return REPLY.cancel.OK(cid, m, body, now, record, table.concat(dropped_cids, ' '))
