-- announce.lua records a broker in the store's meta hash and keeps the
-- store's format (pool/format.go): the newest format that every broker
-- recorded reads, so that no broker meets a record it cannot read.
-- KEYS[1]: the meta hash: 'format' -> the store's format (when absent: 1
--   for a store made before formats were recorded, one with 'buckets'; the
--   broker's newest for a fresh one, with 'migrated' too: nothing to move),
--   and one field 'broker ORIGIN' -> 'READS UNTIL_MS VERSION' a broker.
-- ARGV: the broker's origin, the newest format it reads, how long its
--   record lasts (ms; the broker renews it well before), its version.
-- Returns {the store's format, 1 if the broker is recorded, the store's
-- epoch ('' when it has none: pool/epoch.go), then the origins of the
-- brokers that read an older format than it}: {format, 0}, and the broker
-- not recorded, when the store's format is newer than it reads. A
-- record past its time is removed; the format is raised, in this call, to
-- the newest that every recorded broker reads.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local meta, origin, reads = KEYS[1], ARGV[A.origin], tonumber(ARGV[A.reads])
if not redis.call('HGET', meta, 'format') then
  if redis.call('HEXISTS', meta, 'buckets') == 0 then
    -- A fresh store (or one that lost its data): the newest format, with
    -- nothing to migrate.
    redis.call('HSET', meta, 'format', reads, 'migrated', reads)
  else
    redis.call('HSET', meta, 'format', '1') -- a store made before formats were recorded
  end
end
local format = tonumber(redis.call('HGET', meta, 'format'))
if format > reads then return REPLY.announce(format, 0) end
redis.call('HSET', meta, 'broker ' .. origin, reads .. ' ' .. (now + tonumber(ARGV[A.ttl])) .. ' ' .. ARGV[A.version])
local all, behind = reads, {}
local fields = redis.call('HGETALL', meta)
for i = 1, #fields, 2 do
  local name = string.match(fields[i], '^broker (.+)$')
  if name then
    local r, til = string.match(fields[i + 1], '^(%d+) (%d+)')
    if not r or tonumber(til) < now then
      redis.call('HDEL', meta, fields[i])
    else
      all = math.min(all, tonumber(r))
      if tonumber(r) < reads then behind[#behind + 1] = name end
    end
  end
end
if all > format then
  redis.call('HSET', meta, 'format', all)
  format = all
end
return REPLY.announce(format, 1, redis.call('HGET', meta, 'epoch') or '', unpack(behind))
