-- dead_list.lua lists a topic's dead jobs, oldest death first.
-- KEYS: the shared layout (lib.lua) with one topic.
-- ARGV: origin, topic, offset, limit, preview (bytes of body to show).
-- Returns {total, then per job: member, client id, failures, last error, dead at ms, priority, body preview}.
local t = topic_keys(1, ARGV[2])
local offset, limit, preview = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local out = {redis.call('ZCARD', t.dead)}
if limit <= 0 then return out end
for _, member in ipairs(redis.call('ZRANGE', t.dead, offset, offset + limit - 1)) do
  local job = load(member)
  if job then
    local body = redis.call('HGET', K_BODIES, member) or ''
    for _, v in ipairs({member, job[F_CID] or '', job[F_FAILURES] or 0, job[F_LAST_ERROR] or '', job[F_DEAD_AT] or 0,
                        job[F_PRI], string.sub(body, 1, preview)}) do
      out[#out + 1] = v
    end
  end
end
return out
