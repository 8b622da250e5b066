-- status.lua reads and sets the server status (pool/status.go): a layer for
-- the fleet, every broker sharing the Redis, and one for each broker. A
-- layer is the status obeyed now and, when a stricter one was set with a
-- grace period, that one and when it is enforced (kestrel's
-- statusChangeGracePeriod): announced at once, enforced from then, on
-- Redis's clock, so that every broker enforces it together.
-- KEYS[1]: the fleet's status now, a name ('' or missing: up): what brokers
--   older than the grace period read, and set.
-- KEYS[2]: the fleet's pending change (same slot: its hash tag is
--   KEYS[1]'s name): 'status' -> the stricter status, 'at' -> when (ms). Older
--   brokers ignore it.
-- KEYS[3]: the brokers' layers (same slot): ORIGIN -> 'NOW NEXT AT UNTIL',
--   statuses by name, AT 0 when nothing is pending, UNTIL when the record
--   goes unless its broker renews it.
-- ARGV (mode 'read'): this broker's origin, how long its record lasts (ms),
--   and its layer as it knows it (now, next, at), which recreates a record
--   that went while the broker could not reach Redis.
--   Returns {Redis's time (ms), the fleet's now, next and at, then each
--   broker's origin, now, next and at}. A pending change whose time came
--   is made the layer's now first; a record past its time is removed.
-- ARGV (mode 'set'): scope ('fleet' or 'broker'), the broker's origin
--   (scope broker), the status, the grace period (ms), how long a record
--   lasts (ms), and create ('1': the broker records itself at boot; else
--   a broker not recorded is not found).
--   Returns {R.OK, Redis's time, now, next, at} of the layer set;
--   {R.STATE, next, at} when a stricter status than the one obeyed is
--   asked while another stricter one is pending (kestrel refuses it too);
--   {R.NOT_FOUND} for a broker with no record.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local order = {up = 0, writeavoid = 1, readonly = 2, quiescent = 3}
local function rank(s) return order[s] or 0 end

-- fleet reads the fleet's layer, making a pending change whose time came
-- its status.
local function fleet()
  local cur = redis.call('GET', KEYS[1])
  if not cur or cur == '' then cur = 'up' end
  local pend = redis.call('HMGET', KEYS[2], 'status', 'at')
  if not pend[1] then return cur, cur, 0 end
  local at = tonumber(pend[2]) or 0
  if at <= now or rank(pend[1]) <= rank(cur) then
    if rank(pend[1]) > rank(cur) then
      redis.call('SET', KEYS[1], pend[1])
      cur = pend[1]
    end
    redis.call('DEL', KEYS[2])
    return cur, cur, 0
  end
  return cur, pend[1], at
end

-- broker reads a broker's record: nil when it has none or it is past its
-- time (then removed); a pending change whose time came is made its status.
local function broker(origin, v)
  v = v or redis.call('HGET', KEYS[3], origin)
  if not v then return nil end
  local cur, nxt, at, til = string.match(v, '^(%S+) (%S+) (%d+) (%d+)$')
  if not cur or tonumber(til) < now then
    redis.call('HDEL', KEYS[3], origin)
    return nil
  end
  at = tonumber(at)
  if at > 0 and at <= now then
    cur, nxt, at = nxt, nxt, 0
    redis.call('HSET', KEYS[3], origin, cur .. ' ' .. nxt .. ' 0 ' .. til)
  end
  return cur, nxt, at, tonumber(til)
end

local function record(origin, cur, nxt, at, ttl)
  redis.call('HSET', KEYS[3], origin, cur .. ' ' .. nxt .. ' ' .. at .. ' ' .. (now + ttl))
end

if ARGV[A.mode] == 'read' then
  local a = A.read
  local origin, ttl = ARGV[a.origin], tonumber(ARGV[a.ttl])
  local cur, nxt, at = broker(origin)
  if cur then
    record(origin, cur, nxt, at, ttl)
  else
    local mine_at = tonumber(ARGV[a.at])
    if mine_at > 0 and mine_at <= now then
      record(origin, ARGV[a.next], ARGV[a.next], 0, ttl)
    else
      record(origin, ARGV[a.now], ARGV[a.next], mine_at, ttl)
    end
  end
  local fc, fn, fa = fleet()
  local out = REPLY.status_read(now, fc, fn, fa) -- then a row a broker
  local all = redis.call('HGETALL', KEYS[3])
  for i = 1, #all, 2 do
    local c, n, at2 = broker(all[i], all[i + 1])
    if c then
      for _, v in ipairs(REPLY.status_broker(all[i], c, n, at2)) do out[#out + 1] = v end
    end
  end
  return out
end

local a = A.set
local want, grace, ttl = ARGV[a.status], tonumber(ARGV[a.grace]), tonumber(ARGV[a.ttl])
local cur, nxt, at, til
if ARGV[a.scope] == 'fleet' then
  cur, nxt, at = fleet()
else
  cur, nxt, at, til = broker(ARGV[a.origin])
  if not cur then
    if ARGV[a.create] ~= '1' then return REPLY.status_set.NOT_FOUND() end
    cur, nxt, at = want, want, 0
  end
end
if rank(want) > rank(cur) then
  if at > 0 and want ~= nxt then return REPLY.status_set.STATE(nxt, at) end
  if at == 0 then
    if grace > 0 then nxt, at = want, now + grace else cur, nxt = want, want end
  end
else
  cur, nxt, at = want, want, 0 -- as strict or looser: at once, and no change pending
end
if ARGV[a.scope] == 'fleet' then
  redis.call('SET', KEYS[1], cur)
  if at > 0 then
    redis.call('HSET', KEYS[2], 'status', nxt, 'at', at)
  else
    redis.call('DEL', KEYS[2])
  end
else
  record(ARGV[a.origin], cur, nxt, at, ttl)
end
return REPLY.status_set.OK(now, cur, nxt, at)
