-- claim_alias.lua points a client-supplied id at a job's member, unless it
-- already points at another one. Aliases live in the bucket their id hashes to,
-- apart from the job, so the claim and the push are two steps: an alias whose
-- job never arrived (a crash between them) is stale and may be taken over by
-- naming it in ARGV[3], once it is older than the push could take.
-- KEYS[1]: the aliases hash of the client id's bucket.
-- ARGV: client id, member, the stale member to replace ('' for none).
-- Returns {'OK'} or {'EXISTS', member, age ms}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cur = redis.call('HGET', KEYS[1], ARGV[A.client_id])
if cur then
  local member, at = string.match(cur, '^([^:]+):(%d+)$')
  if member ~= ARGV[A.stale] then return REPLY.claim_alias.EXISTS(member, now - tonumber(at)) end
end
redis.call('HSET', KEYS[1], ARGV[A.client_id], ARGV[A.member] .. ':' .. now)
return REPLY.claim_alias.OK()
