-- forget_topic.lua drops a topic that holds no job and is not paused from its
-- bucket's topic list, with its counters, as beanstalkd forgets an unused tube;
-- with 'force', a paused one too (a topic deleted on purpose).
-- KEYS: the shared layout (lib.lua) with one topic.
-- ARGV: origin, topic, '' or 'force'.
-- Returns 1 if the topic was forgotten, 0 if it is still in use.
local t = topic_keys(1, ARGV[2])
for _, k in ipairs({t.ready, t.delayed, t.reserved, t.buried, t.dead}) do
  if redis.call('EXISTS', k) == 1 then return 0 end
end
local paused_until = tonumber(redis.call('HGET', t.info, 'paused_until') or '0')
if paused_until > now_ms() and ARGV[3] ~= 'force' then return 0 end
redis.call('SREM', K_TOPICS, t.name)
if ARGV[3] == 'force' then
  unreference(t) -- a deleted fanout child stops receiving
  count('queue_deletes', 1)
end
redis.call('DEL', t.info, t.expires) -- expires holds no live job's entry once the sets are empty
redis.call('ZREM', K_DUE, t.name)
return 1
