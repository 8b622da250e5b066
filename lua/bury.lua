-- bury.lua parks a reserved job until it is kicked. Buried jobs keep the order
-- in which they were buried (a per-bucket sequence), the order kick takes them.
-- KEYS: the shared layout (contract.lua) with the job's topic.
-- ARGV: origin, member, topic, attempt (0: unfenced), priority ('' keeps it).
-- Returns {'OK', job reply...} or {'NOT_FOUND'} / {'TOPIC', t} / {'STALE', n} / {'STATE', state} /
-- {'CANCELLED', client id to drop} (lib_limits.lua cancel_held).
local member = ARGV[A.member]
local t = topic_keys(1, ARGV[A.topic])
local job, err = fetch_reserved(member, ARGV[A.topic], tonumber(ARGV[A.attempt]))
if not job then return err end
local cancelled = cancel_held(t, member, job) -- cancelled while held: it ends so
if cancelled then return cancelled end
redis.call('ZREM', t.reserved, member)
free_slot(t, job)
job[F_STATE] = BURIED
job[F_DUE] = 0
if ARGV[A.priority] ~= '' then job[F_PRI] = tonumber(ARGV[A.priority]) end
job[F_BURIES] = job[F_BURIES] + 1
note(t, member, job, 'buried')
redis.call('ZADD', t.buried, redis.call('HINCRBY', K_STATS, 'bury_seq', 1), member)
count('total_buries', 1)
move_state(RESERVED, BURIED)
save(member, job)
return answer(member, job)
