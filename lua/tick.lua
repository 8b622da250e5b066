-- tick.lua is a bucket timer's work for one topic: it moves up to n due jobs to
-- ready, delayed jobs whose time came and reservations whose TTR ran out (those
-- count a timeout), then records the topic's exact next due time.
-- KEYS: the shared layout (lib.lua) with one topic.
-- ARGV: origin, topic, n.
-- Returns {moved, more (1 if due jobs remain)}.
local t = topic_keys(1, ARGV[2])
local n = tonumber(ARGV[3])
local now = now_ms()
local moved = 0
local due = redis.call('ZRANGEBYSCORE', t.delayed, '-inf', now, 'LIMIT', 0, n)
for _, member in ipairs(due) do
  local job = load(member)
  redis.call('ZREM', t.delayed, member)
  make_ready(t, member, job)
  move_state(DELAYED, READY)
  save(member, job)
end
moved = #due
if moved < n then
  local expired = redis.call('ZRANGEBYSCORE', t.reserved, '-inf', now, 'LIMIT', 0, n - moved)
  for _, member in ipairs(expired) do
    local job = load(member)
    redis.call('ZREM', t.reserved, member)
    job[F_TIMEOUTS] = job[F_TIMEOUTS] + 1
    make_ready(t, member, job)
    move_state(RESERVED, READY)
    save(member, job)
  end
  if #expired > 0 then count('total_timeouts', #expired) end
  moved = moved + #expired
end
if moved > 0 then wake(t, moved) end

local next_due = nil
local d = redis.call('ZRANGE', t.delayed, 0, 0, 'WITHSCORES')
local r = redis.call('ZRANGE', t.reserved, 0, 0, 'WITHSCORES')
if d[2] then next_due = tonumber(d[2]) end
if r[2] and (not next_due or tonumber(r[2]) < next_due) then next_due = tonumber(r[2]) end
if next_due then
  redis.call('ZADD', K_DUE, next_due, t.name)
else
  redis.call('ZREM', K_DUE, t.name)
end
local more = 0
if next_due and next_due <= now then more = 1 end
return {moved, more}
