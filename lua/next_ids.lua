-- next_ids: takes a block of job sequence numbers off the id counter.
-- KEYS[1]: the id counter (string).
-- ARGV[1]: the block size; ARGV[2]: when the floor starts (ms since the Unix
--   epoch); ARGV[3]: how many numbers a millisecond the floor grows by.
-- The counter never stands below the floor, Redis's clock since ARGV[2]
-- times ARGV[3], which is above every number handed out before now as long
-- as numbers were taken at less than ARGV[3] a millisecond on average
-- (pool/epoch.go). So numbers never repeat when Redis loses its data, whole
-- (restarted empty: the counter is missing) or in part (an older snapshot, a
-- failover to a replica that lagged: the counter went back), and a stale
-- ack of an old number finds nothing.
-- Returns the block's last number.
local t = redis.call('TIME')
local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local floor = math.max(0, ms - tonumber(ARGV[A.floor_from])) * tonumber(ARGV[A.per_ms])
if tonumber(redis.call('GET', KEYS[1]) or '0') < floor then
  redis.call('SET', KEYS[1], string.format('%.0f', floor))
end
return redis.call('INCRBY', KEYS[1], ARGV[A.block])
