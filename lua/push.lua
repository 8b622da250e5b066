-- push.lua stores a new job and makes it delayed or ready.
-- KEYS: the shared layout (lib.lua) with one topic.
-- ARGV: origin, member, topic, priority, ttr ms, delay ms, body, client id ('' for none).
-- Returns {'OK', now ms, due ms (0 when ready)} or {'EXISTS'} when the member is taken.
local member, topic = ARGV[2], ARGV[3]
local pri, ttr, delay = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local t = topic_keys(1, topic)
if redis.call('HEXISTS', K_JOBS, member) == 1 then return {'EXISTS'} end

local now = now_ms()
local job = {0, topic, pri, ttr, delay, now, 0, 0, 0, 0, 0, 0, ARGV[8]}
redis.call('HSET', K_BODIES, member, ARGV[7])
redis.call('SADD', K_TOPICS, topic)
redis.call('HINCRBY', t.info, 'total_jobs', 1)
count('total_jobs', 1)
place(t, member, job, delay, now)
move_state(nil, job[F_STATE])
save(member, job)
return {'OK', now, job[F_DUE]}
