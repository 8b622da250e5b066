-- release.lua gives a reserved job back: ready now, or delayed when a delay is given.
-- KEYS: the shared layout (lib.lua) with the job's topic.
-- ARGV: origin, member, topic, attempt (0: unfenced), priority ('' keeps it), delay ms.
-- Returns {'OK', due ms (0 when ready)} or {'NOT_FOUND'} / {'TOPIC', t} / {'STALE', n} / {'STATE', state}.
local member = ARGV[2]
local t = topic_keys(1, ARGV[3])
local job, err = fetch(member, ARGV[3], tonumber(ARGV[4]))
if not job then return err end
if job[F_STATE] ~= RESERVED then return {'STATE', job[F_STATE]} end
redis.call('ZREM', t.reserved, member)
if ARGV[5] ~= '' then job[F_PRI] = tonumber(ARGV[5]) end
job[F_RELEASES] = job[F_RELEASES] + 1
count('total_releases', 1)
local delay = tonumber(ARGV[6])
if delay > 0 then
  job[F_STATE] = DELAYED
  job[F_DUE] = now_ms() + delay
  redis.call('ZADD', t.delayed, job[F_DUE], member)
  schedule(t, job[F_DUE])
else
  make_ready(t, member, job)
  wake(t, 1)
end
move_state(RESERVED, job[F_STATE])
save(member, job)
return {'OK', job[F_DUE]}
