-- fail.lua records a consumer's failure of a job it holds (fenced by the
-- delivery, as an ack): the job waits out its retry policy's backoff
-- (delayed), or, past max_attempts, goes to its topic's dead set.
-- KEYS: the shared layout (contract.lua) with the job's topic.
-- ARGV: origin, member, topic, attempt (0: any), error, r (a random number
-- in [0, 1) for the jitter). A job that dies keeps its on_dead in the
-- bucket's follow-ups (outcomes.follow_up).
-- Returns {'OK', job reply..., then the member and client id of each dead job
-- that max_dead made room by dropping} or {'NOT_FOUND'} / {'TOPIC', t} /
-- {'STALE', n} / {'STATE', s}.
local member = ARGV[A.member]
local t = topic_keys(1, ARGV[A.topic])
local job, err = fetch_reserved(member, ARGV[A.topic], tonumber(ARGV[A.attempt]))
if not job then return err end
local cancelled = cancel_held(t, member, job) -- cancelled while held: it ends so
if cancelled then return cancelled end
local now = now_ms()
redis.call('ZREM', t.reserved, member)
free_slot(t, job)
fail_record(t, job, ARGV[A.error])
note(t, member, job, 'failed', ARGV[A.error])
local p = retry_policy(t, job)
if p.max_attempts > 0 and job[F_FAILURES] >= p.max_attempts then
  local on_dead = kill(t, member, job, RESERVED, now)
  if on_dead then outcomes.follow_up(on_dead, now, '', {}) end
else
  local delay = backoff_delay(p, job[F_FAILURES], tonumber(ARGV[A.r]))
  note(t, member, job, 'retried', tostring(delay)) -- after its backoff (ms)
  place(t, member, job, delay, now)
  move_state(RESERVED, job[F_STATE])
  save(member, job)
end
local r = answer(member, job, REPLY.fail.OK)
for _, v in ipairs(dropped_cids) do r[#r + 1] = v end
return r
