-- end_wait.lua begins a wait for a job's end: it marks the job (F_WAITED:
-- the wake channel its end is then announced on, lib.lua announce_end)
-- unless it has ended already, and returns it as it is, so the caller
-- answers at once a job that is completed or dead.
-- KEYS: the shared layout (contract.lua), bucket keys only.
-- ARGV: origin, member, channel.
-- Returns {'OK', job reply...} or {'NOT_FOUND'}.
local member = ARGV[A.member]
local job = load(member)
if not job or job[F_STATE] == EXPIRED then return REPLY.job.NOT_FOUND() end
local ended = job[F_STATE] == COMPLETED or job[F_STATE] == DEAD or job[F_STATE] == CANCELLED
if not ended and job[F_WAITED] ~= ARGV[A.channel] then
  job[F_WAITED] = ARGV[A.channel]
  save(member, job)
end
return answer(member, job)
