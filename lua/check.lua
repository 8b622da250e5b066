-- check.lua verifies one topic against the job records: every member of the
-- topic's four sets has a record and a body, its record names this topic and
-- the state of the set it is in (so no job is in two sets), and the topic's
-- byte count is the sum of its jobs' body sizes, and every ready or delayed
-- job that expires is in the topic's expires set.
-- KEYS: the shared layout (contract.lua) with one topic.
-- ARGV: origin, topic.
-- Returns {members per state (delayed, ready, reserved, buried, dead), problem...}.
local t = topic_keys(1, ARGV[2])
local out = {0, 0, 0, 0, 0}
local bytes = 0
for state, set in ipairs(STATE_SET) do
  for _, m in ipairs(redis.call('ZRANGE', t[set], 0, -1)) do
    out[state] = out[state] + 1
    local job = load(m)
    if not job then
      table.insert(out, m .. ' is in ' .. set .. ' but has no record')
    elseif job[F_STATE] ~= state then
      table.insert(out, m .. ' is in ' .. set .. ' but its record says ' .. tostring(STATE_SET[job[F_STATE]]))
    elseif job[F_TOPIC] ~= t.name then
      table.insert(out, m .. ' is in ' .. t.name .. ' but its record says ' .. job[F_TOPIC])
    elseif redis.call('HEXISTS', K_BODIES, m) == 0 then
      table.insert(out, m .. ' has no body')
    elseif (state == READY or state == DELAYED) and (job[F_EXPIRES] or 0) > 0 and not redis.call('ZSCORE', t.expires, m) then
      table.insert(out, m .. ' expires but is not in ' .. t.name .. "'s expires set")
    end
    if job then bytes = bytes + (job[F_SIZE] or 0) end
  end
end
local counted = tonumber(redis.call('HGET', t.info, 'bytes') or '0')
if counted ~= bytes then
  table.insert(out, t.name .. ' counts ' .. counted .. ' bytes, its jobs hold ' .. bytes)
end
return out
