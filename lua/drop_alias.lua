-- drop_alias.lua removes a client id's alias if it still points at the member.
-- KEYS[1]: the aliases hash of the client id's bucket.
-- ARGV: client id, member.
-- Returns 1 if removed, else 0.
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur and string.match(cur, '^([^:]+):') == ARGV[2] then
  return redis.call('HDEL', KEYS[1], ARGV[1])
end
return 0
