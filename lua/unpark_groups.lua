-- unpark_groups.lua lets a grouped topic's parked groups back into its ring
-- (lib_groups.lua groups.unpark), after its group_max_reserved or group_rate
-- changed: a group parked under the old settings would otherwise wait for
-- its old token or a freed slot. One call is a bounded step.
-- KEYS: the shared layout (contract.lua) with the topic.
-- ARGV: origin, topic, n: the most parked groups to look at.
-- Returns {how many came back, how many it looked at}: n looked at means
-- there may be more.
local t = topic_keys(1, ARGV[A.topic])
if not groups.on(t) then return {0, 0} end
return groups.unpark(t, tonumber(ARGV[A.n]))
