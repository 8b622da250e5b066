-- peek_topic.lua reads the next job of a topic in one state, changing nothing:
-- ready (the one a pop would take, ignoring pause), delayed (soonest due) or
-- buried (buried longest ago).
-- KEYS: the shared layout (lib.lua) with one topic.
-- ARGV: origin, topic, state set ('ready', 'delayed' or 'buried').
-- Returns {'OK', job reply...} or {'NOT_FOUND'}.
local t = topic_keys(1, ARGV[2])
local head = redis.call('ZRANGE', t[ARGV[3]], 0, 0)
if not head[1] then return {'NOT_FOUND'} end
local member = head[1]
local r = reply(member, load(member), redis.call('HGET', K_BODIES, member), now_ms())
table.insert(r, 1, 'OK')
return r
