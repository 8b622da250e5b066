-- add_totals.lua adds what a broker counted of a bucket's totals (pool/totals.go)
-- to their hashes: the bucket's stats and its topics' info hashes, at most
-- once a second, so that the calls that move jobs need not (lib.lua flush).
-- KEYS: the hashes, of one bucket.
-- ARGV: key place (in KEYS), field, amount; then more triples.
-- A hash is added to only while it exists: a topic forgotten meanwhile
-- (forget_topic.lua), or a store wiped, is not made again by a last few
-- totals.
-- Returns how many amounts were added.
local exists, added = {}, 0
for i = A.triples, #ARGV, 3 do
  local key = KEYS[tonumber(ARGV[i])]
  if exists[key] == nil then exists[key] = redis.call('EXISTS', key) == 1 end
  if exists[key] then
    redis.call('HINCRBY', key, ARGV[i + 1], ARGV[i + 2])
    added = added + 1
  end
end
return added
