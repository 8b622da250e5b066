-- history.lua adds a sample of the server's counters to the history list,
-- unless one was added less than an interval ago (every broker samples;
-- the first one due writes, by Redis's clock), and keeps the newest n.
-- KEYS[1]: the history list (newest first).
-- ARGV: interval ms, n, then the sample's field, value pairs (numbers).
-- Returns 1 if the sample was added, else 0.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local head = redis.call('LINDEX', KEYS[1], 0)
if head then
  local ok, last = pcall(cjson.decode, head)
  if ok and type(last) == 'table' and last.t and now - last.t < tonumber(ARGV[1]) then return 0 end
end
local sample = {t = now}
for i = 3, #ARGV, 2 do sample[ARGV[i]] = tonumber(ARGV[i + 1]) end
redis.call('LPUSH', KEYS[1], cjson.encode(sample))
redis.call('LTRIM', KEYS[1], 0, tonumber(ARGV[2]) - 1)
return 1
