-- peek_topic.lua reads the next job of a topic in one state, changing nothing:
-- ready (the one a pop would take, ignoring pause), delayed (soonest due) or
-- buried (buried longest ago).
-- KEYS: the shared layout (lib.lua) with one topic.
-- ARGV: origin, topic, state set ('ready', 'delayed' or 'buried').
-- Returns {'OK', job reply...} or {'NOT_FOUND'}.
local t = topic_keys(1, ARGV[2])
local head = redis.call('ZRANGE', t[ARGV[3]], 0, 0)
if not head[1] then return {'NOT_FOUND'} end
return answer(head[1], load(head[1]))
