-- forget_topic.lua drops a topic that holds no job and is not paused from its
-- bucket's topic list, with its counters, as beanstalkd forgets an unused tube;
-- with 'force', a paused one too (a topic deleted on purpose), and its
-- run-time settings with it (conf.ini's stay).
-- KEYS: the shared layout (contract.lua) with one topic.
-- ARGV: origin, topic, '' or 'force'.
-- Returns 1 if the topic was forgotten, 0 if it is still in use.
local t = topic_keys(1, ARGV[A.topic])
if not empty(t) then return 0 end
local paused_until = tonumber(redis.call('HGET', t.info, 'paused_until') or '0')
if paused_until > now_ms() and ARGV[A.force] ~= 'force' then return 0 end
forget(t)
if ARGV[A.force] == 'force' then
  unreference(t) -- a deleted fanout child stops getting copies
  forget_run_settings(t)
  count('queue_deletes', 1)
end
return 1
