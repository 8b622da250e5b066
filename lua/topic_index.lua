-- topic_index.lua makes one step of rebuilding a bucket's topic index from
-- its topics set (data written by a gmq that kept no index, or an index that
-- disagrees with its set). pool/topicindex.go calls it until it is done:
-- first every step of 'add', then every step of 'prune'. Each step is one
-- script, so no step sees the set and the index apart.
-- KEYS[1]: the bucket's topics set; KEYS[2]: its topic index (zset, every score 0).
-- ARGV[1]: 'add' or 'prune'; ARGV[2]: where to go on from (add: an SSCAN cursor,
--   '0' at first; prune: a ZRANGE BYLEX min, '-' at first); ARGV[3]: about how
--   many names to look at.
-- add: indexes the names of one SSCAN step; returns the next cursor ('0': done).
-- prune: drops up to ARGV[3] indexed names, in order, that the set does not
--   hold; returns the min to go on from, or '' when done.
local a = A[ARGV[A.mode]] -- add's or prune's arguments' places
local set, index, from, n = KEYS[1], KEYS[2], ARGV[a.from], tonumber(ARGV[a.n])

-- zadd indexes names, a slice at a time (unpack has a bounded stack).
local function zadd(names)
  for i = 1, #names, 500 do
    local args = {}
    for j = i, math.min(i + 499, #names) do
      args[#args + 1] = 0
      args[#args + 1] = names[j]
    end
    redis.call('ZADD', index, unpack(args))
  end
end

if ARGV[A.mode] == 'add' then
  local r = redis.call('SSCAN', set, from, 'COUNT', n)
  zadd(r[2])
  return r[1]
end

local names = redis.call('ZRANGE', index, from, '+', 'BYLEX', 'LIMIT', 0, n)
if #names == 0 then return '' end
local held = redis.call('SMISMEMBER', set, unpack(names))
for i, name in ipairs(names) do
  if held[i] == 0 then redis.call('ZREM', index, name) end
end
if #names < n then return '' end
return '(' .. names[#names]
