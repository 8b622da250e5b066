-- kick_job.lua makes one buried or delayed job ready.
-- KEYS: the shared layout (contract.lua) with the job's topic.
-- ARGV: origin, member, topic.
-- Returns {'OK', job reply...} or {'NOT_FOUND'} / {'TOPIC', t} / {'STATE', state}.
local member = ARGV[A.member]
local t = topic_keys(1, ARGV[A.topic])
local job, err = fetch(member, ARGV[A.topic], 0)
if not job then return err end
local from = job[F_STATE]
if from == DEAD then
  revive(t, member, job) -- its failures forgotten, as a retry from the dead set
  count('total_kicks', 1)
  return answer(member, job)
end
if from ~= BURIED and from ~= DELAYED then return REPLY.job_call.STATE(from) end
remove_from_state(t, member, job)
job[F_KICKS] = job[F_KICKS] + 1
note(t, member, job, 'kicked')
make_ready(t, member, job)
count('total_kicks', 1)
move_state(from, READY)
save(member, job)
wake(t, 1)
return answer(member, job)
