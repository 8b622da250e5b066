-- unpark_groups.lua lets a grouped topic's parked groups back into its ring
-- (lib_groups.lua groups.unpark), after its group_max_reserved or group_rate
-- changed: a group parked under the old settings would otherwise wait for
-- its old token or a freed slot.
-- KEYS: the shared layout (contract.lua) with the topic.
-- ARGV: origin, topic. Returns how many groups came back.
local t = topic_keys(1, ARGV[2])
if not groups.on(t) then return 0 end
return groups.unpark(t)
