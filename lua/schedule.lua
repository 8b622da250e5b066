-- schedule.lua writes or deletes a schedule in its bucket (pool/schedules.go):
-- its hash and its next fire in the bucket's due zset, in one step.
-- KEYS: the shared layout (contract.lua) with no topic, then the schedule's hash.
-- ARGV: origin, 'set', name, spec (JSON), file layer, run layer ('' none:
-- removed), next fire ms (0: none, paused) -> 1; or origin, 'delete', name -> 1.
-- A rewrite keeps what the schedule's fires did (last, last_id, fires...).
local key = op_key(#KEYS)
local due = SCHEDULE_DUE .. ARGV[3]
if ARGV[2] == 'delete' then
  redis.call('DEL', key)
  redis.call('ZREM', K_DUE, due)
  return 1
end
redis.call('HSET', key, 'spec', ARGV[4], 'next', ARGV[7])
for i, layer in ipairs({'file', 'run'}) do
  if ARGV[4 + i] == '' then redis.call('HDEL', key, layer) else redis.call('HSET', key, layer, ARGV[4 + i]) end
end
if tonumber(ARGV[7]) > 0 then
  redis.call('ZADD', K_DUE, ARGV[7], due)
else
  redis.call('ZREM', K_DUE, due)
end
return 1
