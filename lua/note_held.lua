-- note_held.lua adds the time a consumer's pop was held back by topic t's
-- limits (its rate or max_reserved: lib_limits.lua) to the topic's
-- 'limited_ms', when it was served or gave up. A topic forgotten meanwhile
-- is left so.
-- KEYS: the shared layout (contract.lua) with the topic.
-- ARGV: origin, topic, ms.
-- Returns 1 if it was noted, else 0.
local t = topic_keys(1, ARGV[A.topic])
if redis.call('EXISTS', t.info) == 0 then return 0 end
redis.call('HINCRBY', t.info, 'limited_ms', tonumber(ARGV[A.ms]))
return 1
