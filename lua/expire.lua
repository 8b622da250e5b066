-- expire.lua expires up to n of a topic's jobs whose time ran out, one
-- bounded step of kestrel's flush_expired; the caller repeats it while a step
-- looks at n.
-- KEYS: the shared layout (contract.lua) with one topic.
-- ARGV: origin, topic, n.
-- Returns {entries looked at, jobs expired, then member and client id of each expired job that had one}.
local t = topic_keys(1, ARGV[A.topic])
local looked, expired = sweep_expired(t, now_ms(), tonumber(ARGV[A.n]))
local out = REPLY.expire(looked, expired) -- then the dropped client ids
for _, v in ipairs(dropped_cids) do out[#out + 1] = v end
return out
