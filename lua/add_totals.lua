-- add_totals.lua adds what a broker counted of a bucket's totals (pool/totals.go)
-- to their hashes: the bucket's stats and its topics' info hashes, at most
-- once a second, so that the calls that move jobs need not (lib.lua flush).
-- KEYS[1]: the number of the broker's last write this bucket took (a
-- string, with a TTL); then the hashes, of the same bucket.
-- ARGV: this write's number, how long to keep it (ms), then key place (in
-- KEYS), field, amount, and more triples.
-- A write is numbered and retried as it is when its answer was lost: one
-- whose number is not above the last taken was added already, and is not
-- again. A hash is added to only while it exists: a topic forgotten
-- meanwhile (forget_topic.lua), or a store wiped, is not made again by a
-- last few totals.
-- Returns how many amounts were added.
local seq = tonumber(ARGV[A.seq])
if seq <= tonumber(redis.call('GET', KEYS[1]) or '0') then return 0 end
redis.call('SET', KEYS[1], seq, 'PX', ARGV[A.ttl])
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
