-- kick.lua makes up to n jobs of a topic ready: buried ones (oldest first,
-- then the dead ones, which beanstalkd's protocol shows as buried, their
-- failures forgotten) if the topic has any, otherwise delayed ones (soonest
-- first), as beanstalkd's kick does.
-- The caller loops for bounds above one call's batch and passes the kind the first
-- call chose, so a loop never mixes the two.
-- KEYS: the shared layout (contract.lua) with one topic.
-- ARGV: origin, topic, n (at most one batch), kind ('' to choose, 'buried' or 'delayed').
-- Returns {kicked, kind}.
local t = topic_keys(1, ARGV[A.topic])
local n, kind = tonumber(ARGV[A.n]), ARGV[A.kind]
if kind == '' then
  kind = 'delayed'
  if redis.call('ZCARD', t.buried) + redis.call('ZCARD', t.dead) > 0 then kind = 'buried' end
end
local members = redis.call('ZRANGE', t[kind], 0, n - 1)
local revived = 0
if kind == 'buried' and #members < n then
  for _, member in ipairs(redis.call('ZRANGE', t.dead, 0, n - #members - 1)) do
    local job = load(member)
    job[F_KICKS] = job[F_KICKS] + 1
    revive(t, member, job)
    revived = revived + 1
  end
  if revived > 0 then count('total_kicks', revived) end
end
for _, member in ipairs(members) do
  local job = load(member)
  local from = job[F_STATE]
  redis.call('ZREM', t[kind], member)
  job[F_KICKS] = job[F_KICKS] + 1
  note(t, member, job, 'kicked')
  make_ready(t, member, job)
  move_state(from, READY)
  save(member, job)
end
if #members > 0 then
  count('total_kicks', #members)
  wake(t, #members)
end
return REPLY.kick(#members + revived, kind)
