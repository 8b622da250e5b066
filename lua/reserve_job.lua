-- reserve_job.lua reserves one job by id, whatever its topic and whether the
-- topic is paused, if it is ready, delayed or buried (beanstalkd's reserve-job).
-- KEYS: the shared layout (contract.lua) with the job's topic.
-- ARGV: origin, member, topic.
-- Returns {'OK', job reply...} or {'NOT_FOUND'} / {'TOPIC', t} / {'STATE', 3} when it is reserved.
local member = ARGV[A.member]
local t = topic_keys(1, ARGV[A.topic])
local job, err = fetch(member, ARGV[A.topic], 0)
if not job then return err end
local from = job[F_STATE]
if from == RESERVED or from == WAITING then return REPLY.job_call.STATE(from) end
local now = now_ms()
if (from == READY or from == DELAYED) and (job[F_EXPIRES] or 0) > 0 and job[F_EXPIRES] <= now then
  expire_job(t, member, job, now) -- never delivered (its client id dangles, harmless, as after a crash)
  return REPLY.job_call.NOT_FOUND()
end
remove_from_state(t, member, job)
return REPLY.job.OK(reserve(t, member, job, from, now))
