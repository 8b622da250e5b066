-- forget_topic.lua drops a topic that holds no job and is not paused from its
-- bucket's topic list, with its counters, as beanstalkd forgets an unused tube;
-- with 'force' (a topic deleted on purpose, after its purge), a paused one
-- too, and it drops the topic's run-time settings (conf.ini's stay) and its
-- place as a fanout child even when a push came in after the purge: that
-- job stays, under conf.ini's settings, and the topic with it.
-- KEYS: the shared layout (contract.lua) with one topic.
-- ARGV: origin, topic, '' or 'force'.
-- Returns 1 if the topic was forgotten, 0 if it is still in use.
local t = topic_keys(1, ARGV[A.topic])
local force = ARGV[A.force] == 'force'
if force then
  unreference(t) -- a deleted fanout child stops getting copies
  forget_run_settings(t)
  count('queue_deletes', 1)
end
if not empty(t) then return 0 end
local paused_until = tonumber(redis.call('HGET', t.info, 'paused_until') or '0')
if paused_until > now_ms() and not force then return 0 end
forget(t)
return 1
