-- dead_retry.lua puts dead jobs back to ready with their failures
-- forgotten: the members named, or up to n of the oldest. One bounded step:
-- the caller repeats an all-jobs retry while a step retries n.
-- KEYS: the shared layout (contract.lua) with one topic.
-- ARGV: origin, topic, n, then members ('' none: the oldest n).
-- Returns the number retried.
local t = topic_keys(1, ARGV[A.topic])
local members = {}
for i = A.members, #ARGV do members[#members + 1] = ARGV[i] end
if #members == 0 then members = redis.call('ZRANGE', t.dead, 0, tonumber(ARGV[A.n]) - 1) end
local done = 0
for _, member in ipairs(members) do
  local job = load(member)
  if job and job[F_STATE] == DEAD and job[F_TOPIC] == t.name then
    revive(t, member, job)
    done = done + 1
  end
end
if done > 0 then count_topic(t, 'dead_retried', done) end
return done
