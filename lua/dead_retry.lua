-- dead_retry.lua puts dead jobs back to ready with their failures
-- forgotten, or pushes completed or cancelled ones again (set: 'dead',
-- 'completed' or 'cancelled'):
-- the members named, or up to n of the set's first (the oldest dead; the
-- completed due to be removed first). One bounded step: the caller repeats
-- an all-jobs retry while a step retries n.
-- KEYS: the shared layout (contract.lua) with one topic.
-- ARGV: origin, topic, set, n, then members ('' none: the first n).
-- Returns the number retried.
local t = topic_keys(1, ARGV[A.topic])
local state = ({dead = DEAD, completed = COMPLETED, cancelled = CANCELLED})[ARGV[A.set]]
local set = t[STATE_SET[state]]
local completed = state ~= DEAD -- pushed again (lib_outcomes.lua again)
local members = {}
for i = A.members, #ARGV do members[#members + 1] = ARGV[i] end
if #members == 0 then members = redis.call('ZRANGE', set, 0, tonumber(ARGV[A.n]) - 1) end
local done = 0
for _, member in ipairs(members) do
  local job = load(member)
  if job and job[F_STATE] == state and job[F_TOPIC] == t.name then
    if completed then outcomes.again(t, member, job) else revive(t, member, job) end
    done = done + 1
  end
end
if done > 0 and not completed then count_topic(t, 'dead_retried', done) end
return done
