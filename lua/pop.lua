-- pop.lua reserves a ready job from the listed topics that are not paused.
-- Mode 'first' takes the best job of the first topic (in the consumer's order)
-- that has one, as gmq's pop does; mode 'best' takes the lowest (priority, id)
-- among all of them, as beanstalkd's reserve does; mode 'peek' only says which
-- job 'best' would take. Within a topic: lowest priority first, FIFO by id.
-- KEYS: the shared layout (lib.lua) with n topics, in the consumer's order.
-- ARGV: origin, mode, n, then the n topic names.
-- Returns {'OK', more, job reply...} where more is 1 when the topic still has
-- ready jobs (a TTR of 0 deletes the job as it is popped: state 0 in the reply);
-- in peek mode {'PEEK', topic, priority, member};
-- otherwise {'EMPTY', ms until the earliest pause with ready jobs ends, or -1}.
local mode, n = ARGV[2], tonumber(ARGV[3])
local now = now_ms()
local pause_wait = -1
local best, best_pri, best_member
for i = 1, n do
  local t = topic_keys(i, ARGV[3 + i])
  local paused_until = tonumber(redis.call('HGET', t.info, 'paused_until') or '0')
  if paused_until > now then
    if redis.call('ZCARD', t.ready) > 0 and (pause_wait < 0 or paused_until - now < pause_wait) then
      pause_wait = paused_until - now
    end
  else
    local head = redis.call('ZRANGE', t.ready, 0, 0, 'WITHSCORES')
    if head[1] then
      local pri = tonumber(head[2])
      if not best or pri < best_pri or (pri == best_pri and head[1] < best_member) then
        best, best_pri, best_member = t, pri, head[1]
      end
      if mode == 'first' then break end
    end
  end
end
if not best then return {'EMPTY', pause_wait} end
if mode == 'peek' then return {'PEEK', best.name, best_pri, best_member} end

redis.call('ZREM', best.ready, best_member)
local r = reserve(best, best_member, load(best_member), READY, now)
local more = 0
if redis.call('ZCARD', best.ready) > 0 then more = 1 end
table.insert(r, 1, more)
table.insert(r, 1, 'OK')
return r
