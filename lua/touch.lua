-- touch.lua gives a reserved job a fresh TTR, counted from now.
-- KEYS: the shared layout (contract.lua) with the job's topic.
-- ARGV: origin, member, topic, attempt (0: unfenced).
-- Returns {'OK', job reply...} or {'NOT_FOUND'} / {'TOPIC', t} / {'STALE', n} / {'STATE', state}.
local member = ARGV[2]
local t = topic_keys(1, ARGV[3])
local job, err = fetch_reserved(member, ARGV[3], tonumber(ARGV[4]))
if not job then return err end
job[F_DUE] = now_ms() + job[F_TTR]
redis.call('ZADD', t.reserved, job[F_DUE], member)
count('total_touches', 1)
save(member, job)
return answer(member, job)
