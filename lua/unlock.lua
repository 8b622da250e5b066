-- unlock.lua releases a lock its holder took with SET NX PX: only if it
-- still holds it (a holder whose lock ran out must not free the next one's).
-- KEYS[1]: the lock. ARGV[1]: the holder's token. Returns 1 if released.
if redis.call('GET', KEYS[1]) == ARGV[A.token] then
  return redis.call('DEL', KEYS[1])
end
return 0
