-- history.lua adds a sample of counters to each history list of KEYS
-- (newest first), by Redis's clock: the server's history (one list: every
-- broker samples, the first one due writes), or the own histories of some
-- topics of one bucket (their lists share its slot). A list whose newest
-- sample is less than an interval old is left alone. Each list keeps its
-- newest n samples and, given a time to live, lives that long after its
-- last sample (so the list of a topic no longer sampled, or deleted, goes
-- by itself).
-- KEYS[i]: a history list.
-- ARGV[1]: the interval, ms (0: always add); ARGV[2]: n; ARGV[3]: the time
-- to live, ms (0: none); ARGV[4]: f, how many fields a sample has;
-- ARGV[5..4+f]: their names; then f values (numbers; "" leaves the field
-- out) for each list, in KEYS order.
-- Returns how many lists got the sample.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local every, n, ttl, f = tonumber(ARGV[A.every]), tonumber(ARGV[A.n]), tonumber(ARGV[A.ttl]), tonumber(ARGV[A.f])

-- due says whether the list's newest sample is an interval old (or absent).
local function due(key)
  if every <= 0 then return true end
  local head = redis.call('LINDEX', key, 0)
  if not head then return true end
  local ok, last = pcall(cjson.decode, head)
  return not (ok and type(last) == 'table' and tonumber(last.t) and now - last.t < every)
end

local added = 0
for i, key in ipairs(KEYS) do
  if due(key) then
    local sample = {t = now}
    local first = A.samples - 1 + f + (i - 1) * f
    for j = 1, f do sample[ARGV[A.samples - 1 + j]] = tonumber(ARGV[first + j]) end
    redis.call('LPUSH', key, cjson.encode(sample))
    redis.call('LTRIM', key, 0, n - 1)
    if ttl > 0 then redis.call('PEXPIRE', key, ttl) end
    added = added + 1
  end
end
return added
