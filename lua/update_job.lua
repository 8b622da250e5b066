-- update_job.lua changes a waiting job (ready or delayed): its delay (due
-- now + delay: ready at once when 0), its priority, its body, each when
-- given. A reserved, buried or dead job is not changed: its consumer or its
-- failure holds it.
-- KEYS: the shared layout (contract.lua) with the job's topic.
-- ARGV: origin, member, topic, delay ms ('' unchanged), priority (''
-- unchanged), body ('' with body_given '' unchanged), body_given ('1': set
-- the body, even to ''), json ('1': the new body is a JSON object or
-- array's text, shown as JSON; F_JSON).
-- A job whose expiry passed (no sweep removed it yet) is expired now.
-- Returns {'OK', job reply...} or {'NOT_FOUND'} / {'TOPIC', t} / {'STATE',
-- state}, or the topic's limits' refusal of the new body: {'TOO_BIG',
-- max_item_size} or {'FULL', 'max_size', the limit}.
local member = ARGV[A.member]
local t = topic_keys(1, ARGV[A.topic])
local job, err = fetch(member, ARGV[A.topic], 0)
if not job then return err end
local from = job[F_STATE]
if from ~= READY and from ~= DELAYED then return REPLY.job_call.STATE(from) end
if (job[F_EXPIRES] or 0) > 0 and job[F_EXPIRES] <= now_ms() then
  expire_job(t, member, job, now_ms()) -- its time ran out before a sweep found it: gone, as for a pop
  return REPLY.job_call.NOT_FOUND()
end
local function arg(v) if v ~= '' then return tonumber(v) end end
local body = nil
if ARGV[A.body_given] == '1' then body = ARGV[A.body] end
local function size() return tonumber(redis.call('HGET', t.info, 'bytes') or '0') end
local json = 0
if ARGV[A.json] == '1' then json = 1 end
note(t, member, job, 'updated') -- saved by change_waiting, with the change
local refused = change_waiting(t, member, job, arg(ARGV[A.delay]), arg(ARGV[A.priority]), body, json, now_ms(), size)
if refused then return refused end
return answer(member, job)
