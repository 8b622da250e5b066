-- outbox.lua hands a bucket's expired jobs bound for another topic
-- (expire_to) to the bucket timer that pushes them there, and removes them
-- once pushed. A crash between the push and 'done' pushes them again: an
-- expired job is moved at least once, never lost.
-- KEYS: the shared layout (contract.lua), no topic.
-- ARGV: origin, 'take', n -> {member, topic, priority, ttr ms, body, traceparent, group, json (F_JSON: 1 or
--       0), ...} of up to n jobs, oldest first (pool.moveExpired reads them by these places)
--       origin, 'done', member... -> the number of jobs left in the outbox
if ARGV[A.mode] == 'take' then
  local out = REPLY.outbox_take() -- then a row each
  for _, member in ipairs(redis.call('ZRANGE', K_OUTBOX, 0, tonumber(ARGV[A.take.n]) - 1)) do
    local job = load(member)
    if job and job[F_STATE] == EXPIRED then
      for _, v in ipairs(REPLY.outbox_job(member, job[F_TOPIC], job[F_PRI], job[F_TTR], jobbody.read(member, job) or '',
                                          job[F_TRACE] or '', job[F_GROUP] or '', job[F_JSON] or 0)) do
        out[#out + 1] = v
      end
    else
      redis.call('ZREM', K_OUTBOX, member) -- not an outbox job (cannot happen): let it go
    end
  end
  return out
end
for i = A.done.members, #ARGV do
  local member = ARGV[i]
  if redis.call('ZREM', K_OUTBOX, member) == 1 then
    local job = load(member)
    redis.call('HDEL', K_JOBS, member)
    jobbody.drop(member, job)
  end
end
local left = redis.call('ZCARD', K_OUTBOX)
if left == 0 then redis.call('ZREM', K_DUE, OUTBOX_DUE) end
return left
