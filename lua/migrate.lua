-- migrate.lua moves a bucket's short bodies from its bodies hash into their
-- records, a bounded step a call, once the store's format is 2 (lib.lua
-- jobbody; pool/format.go Migrate). A body longer than jobbody.INLINE stays.
-- KEYS: the shared layout (contract.lua), no topic.
-- ARGV: caller (its format must be 2 or more), an HSCAN cursor of the bodies
--   hash ('0' to start a pass), n: about how many bodies to look at.
-- Returns {the next cursor ('0': the pass is over), bodies moved}.
if jobbody.format < 2 then return REPLY.migrate('0', 0) end
local scan = redis.call('HSCAN', K_BODIES, ARGV[A.cursor], 'COUNT', tonumber(ARGV[A.n]))
local found, moved = scan[2], 0
for i = 1, #found, 2 do
  local member, body = found[i], found[i + 1]
  if #body <= jobbody.INLINE then
    local job = load(member)
    if job and job[F_BODY] == nil then
      job[F_BODY] = body
      save(member, job)
      redis.call('HDEL', K_BODIES, member)
      moved = moved + 1
    end
  end
end
return REPLY.migrate(scan[1], moved)
