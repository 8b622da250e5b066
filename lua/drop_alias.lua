-- drop_alias.lua removes client ids' aliases that still point at their members.
-- KEYS[1]: the aliases hash of the client ids' bucket (every id given hashes to it).
-- ARGV: client id, member, then more pairs.
-- Returns how many were removed.
local removed = 0
for i = A.pairs, #ARGV, 2 do
  local cur = redis.call('HGET', KEYS[1], ARGV[i])
  if cur and string.match(cur, '^([^:]+):') == ARGV[i + 1] then
    removed = removed + redis.call('HDEL', KEYS[1], ARGV[i])
  end
end
return removed
