-- pause.lua stops pops from a topic for a while (0 resumes it now). Pushes,
-- peeks, deletes and kicks are unaffected, as in beanstalkd's pause-tube.
-- KEYS: the shared layout (contract.lua) with one topic.
-- ARGV: origin, topic, pause ms, '1' to pause a topic not known yet ('' to refuse it).
-- Returns {'OK', paused until ms (0 when resumed)} or {'NOT_FOUND'} for an unknown topic.
local t = topic_keys(1, ARGV[A.topic])
if redis.call('SISMEMBER', K_TOPICS, t.name) == 0 then
  if ARGV[A.create] ~= '1' then return REPLY.pause.NOT_FOUND() end
  add_topic(t)
end
local ms = tonumber(ARGV[A.ms])
count_topic(t, 'total_pauses', 1)
if ms <= 0 then
  redis.call('HDEL', t.info, 'paused_until', 'pause_ms')
  local ready = redis.call('ZCARD', t.ready)
  if ready > 0 then wake(t, ready) end
  return REPLY.pause.OK(0)
end
local until_ms = now_ms() + ms
redis.call('HSET', t.info, 'paused_until', until_ms, 'pause_ms', ms)
return REPLY.pause.OK(until_ms)
