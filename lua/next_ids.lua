-- next_ids: takes a block of job sequence numbers off the id counter.
-- KEYS[1]: the id counter (string).
-- ARGV[1]: the block size; ARGV[2]: when the floor starts (ms since the Unix
--   epoch); ARGV[3]: how many numbers a millisecond the floor grows by.
-- A missing counter (a new store, or one that lost its data) starts at the
-- floor, Redis's clock since ARGV[2] times ARGV[3]: above every number a lost
-- counter can have handed out, as long as it grew by less than ARGV[3] a
-- millisecond on average (pool/epoch.go). So numbers never repeat across a
-- data loss, and a stale ack of an old number finds nothing.
-- Returns the block's last number.
if redis.call('EXISTS', KEYS[1]) == 0 then
  local t = redis.call('TIME')
  local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local floor = math.max(0, ms - tonumber(ARGV[2])) * tonumber(ARGV[3])
  redis.call('SET', KEYS[1], string.format('%.0f', floor))
end
return redis.call('INCRBY', KEYS[1], ARGV[1])
