-- due_topics.lua tells a bucket timer which topics have due work and how long
-- it may sleep otherwise. Due times are read against Redis's clock, so brokers
-- with skewed clocks still never move a job early.
-- KEYS[1]: the bucket's due zset.
-- ARGV[1]: at most this many topics.
-- Returns {ms until the next due time (-1: nothing scheduled), topic...}; the
-- wait is 0 when topics are returned.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local topics = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[A.n]))
if #topics > 0 then
  local out = REPLY.due_topics(0)
  for _, topic in ipairs(topics) do out[#out + 1] = topic end
  return out
end
local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if head[2] then return REPLY.due_topics(tonumber(head[2]) - now) end
return REPLY.due_topics(-1)
