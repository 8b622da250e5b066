-- release.lua gives a reserved job back: ready now, or delayed when a delay is given.
-- KEYS: the shared layout (contract.lua) with the job's topic.
-- ARGV: origin, member, topic, attempt (0: unfenced), priority ('' keeps it), delay ms,
--       'uncounted' for a job given back by a closing connection (not a release).
-- The delay becomes the job's delay, as in beanstalkd.
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
if ARGV[A.priority] ~= '' then job[F_PRI] = tonumber(ARGV[A.priority]) end
if ARGV[A.mode] ~= 'uncounted' then
  job[F_RELEASES] = job[F_RELEASES] + 1
  count('total_releases', 1)
end
job[F_DELAY] = tonumber(ARGV[A.delay])
note(t, member, job, ARGV[A.mode] == 'uncounted' and 'given_back' or 'released', ARGV[A.delay])
place(t, member, job, tonumber(ARGV[A.delay]), now_ms())
move_state(RESERVED, job[F_STATE])
save(member, job)
return answer(member, job)
