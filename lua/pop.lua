-- pop.lua reserves the best ready job of the first listed topic that has one
-- and is not paused: lowest priority number first, FIFO (by id) within a priority.
-- KEYS: the shared layout (lib.lua) with n topics, in the consumer's order.
-- ARGV: origin, n, then the n topic names.
-- Returns {'OK', more, job reply...} where more is 1 when the topic still has ready
-- jobs; a TTR of 0 deletes the job as it is popped (state 0 in the reply).
-- Otherwise {'EMPTY', ms until the earliest pause with ready jobs ends, or -1}.
local n = tonumber(ARGV[2])
local now = now_ms()
local pause_wait = -1
for i = 1, n do
  local t = topic_keys(i, ARGV[2 + i])
  local paused_until = tonumber(redis.call('HGET', t.info, 'paused_until') or '0')
  if paused_until > now then
    if redis.call('ZCARD', t.ready) > 0 and (pause_wait < 0 or paused_until - now < pause_wait) then
      pause_wait = paused_until - now
    end
  else
    local head = redis.call('ZPOPMIN', t.ready)
    if head[1] then
      local member = head[1]
      local job = load(member)
      local body = redis.call('HGET', K_BODIES, member)
      job[F_RESERVES] = job[F_RESERVES] + 1
      count('total_reserves', 1)
      redis.call('HINCRBY', t.info, 'total_reserves', 1)
      if job[F_TTR] == 0 then
        move_state(READY, nil)
        redis.call('HDEL', K_JOBS, member)
        redis.call('HDEL', K_BODIES, member)
        job[F_STATE] = 0
      else
        move_state(READY, RESERVED)
        job[F_STATE] = RESERVED
        job[F_DUE] = now + job[F_TTR]
        redis.call('ZADD', t.reserved, job[F_DUE], member)
        schedule(t, job[F_DUE])
        save(member, job)
      end
      local more = 0
      if redis.call('ZCARD', t.ready) > 0 then more = 1 end
      local r = reply(member, job, body, now)
      table.insert(r, 1, more)
      table.insert(r, 1, 'OK')
      return r
    end
  end
end
return {'EMPTY', pause_wait}
