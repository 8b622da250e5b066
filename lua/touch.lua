-- touch.lua gives a reserved job a fresh TTR, counted from now.
-- KEYS: the shared layout (contract.lua) with the job's topic.
-- ARGV: origin, member, topic, attempt (0: unfenced).
-- Returns {'OK', job reply...} or {'NOT_FOUND'} / {'TOPIC', t} / {'STALE', n} / {'STATE', state} /
-- {'CANCELLED', client id to drop} (lib_limits.lua cancel_held).
local member = ARGV[A.member]
local t = topic_keys(1, ARGV[A.topic])
local job, err = fetch_reserved(member, ARGV[A.topic], tonumber(ARGV[A.attempt]))
if not job then return err end
local cancelled = cancel_held(t, member, job) -- cancelled while held: it ends so
if cancelled then return cancelled end
job[F_DUE] = now_ms() + job[F_TTR]
redis.call('ZADD', t.reserved, job[F_DUE], member)
count('total_touches', 1)
save(member, job)
return answer(member, job)
