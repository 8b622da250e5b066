-- schedule.lua writes or deletes a schedule in its bucket (pool/schedules.go):
-- its hash and its next fire in the bucket's due zset, in one step.
-- KEYS: the shared layout (contract.lua) with no topic, then the schedule's hash.
-- ARGV: origin, 'set', name, spec (JSON), file layer, run layer ('' none:
-- removed), next fire ms (0: none, paused), keep ('1': a schedule whose
-- next fire is set keeps it, so a rewrite that changes nothing of when it
-- fires neither loses a fire that is due nor races one) -> 1;
-- origin, 'delete', name -> its next fire ms, as it was (0: none, or no
-- schedule here): a move carries it to the new bucket;
-- origin, 'orphan', name, fresh ms, put-off ms: the bucket's due entry of a
-- schedule the index does not name: a hash written within fresh ms may be
-- a write's under way (its new bucket, not yet named), so its due entry is
-- put off; an older one (or none) is an orphan, and goes -> 0 put off, 1 gone;
-- origin, 'advance', name, due ms, next ms: a fire that could not be made
-- (its push refused before the fire was counted) moves the schedule on and
-- counts it refused, if its next fire is still due -> 1 or 0.
-- A rewrite keeps what the schedule's fires did (last, last_id, fires...).
local key = op_key(#KEYS)
local mode = ARGV[A.mode]
local a = A[mode] -- this mode's arguments' places
local due = SCHEDULE_DUE .. ARGV[a.name]
local function set_next(ms)
  redis.call('HSET', key, 'next', ms)
  if tonumber(ms) > 0 then
    redis.call('ZADD', K_DUE, ms, due)
  else
    redis.call('ZREM', K_DUE, due)
  end
end
if mode == 'delete' then
  local was = tonumber(redis.call('HGET', key, 'next') or '0')
  redis.call('DEL', key)
  redis.call('ZREM', K_DUE, due)
  return was
end
if mode == 'orphan' then
  local written = tonumber(redis.call('HGET', key, 'written') or '0')
  if written > 0 and now_ms() - written < tonumber(ARGV[a.fresh]) then
    redis.call('ZADD', K_DUE, 'XX', 'INCR', ARGV[a.put_off], due)
    return 0
  end
  redis.call('DEL', key)
  redis.call('ZREM', K_DUE, due)
  return 1
end
if mode == 'advance' then
  if redis.call('HGET', key, 'next') ~= ARGV[a.due] then return 0 end
  set_next(ARGV[a.next])
  redis.call('HINCRBY', key, 'refused', 1)
  return 1
end
redis.call('HSET', key, 'spec', ARGV[a.spec], 'written', now_ms())
for _, layer in ipairs({'file', 'run'}) do
  local v = ARGV[a[layer]]
  if v == '' then redis.call('HDEL', key, layer) else redis.call('HSET', key, layer, v) end
end
local cur = redis.call('HGET', key, 'next') or '0'
if ARGV[a.keep] == '1' and tonumber(cur) > 0 then
  -- Kept, and due in the bucket's zset too: the hash may be one a write
  -- cut short left here with no due entry, which then never fired.
  set_next(cur)
else
  set_next(ARGV[a.next])
end
return 1
