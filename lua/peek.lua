-- peek.lua reads one job by id, with its body, changing nothing.
-- KEYS: the shared layout (contract.lua), bucket keys only.
-- ARGV: origin, member.
-- Returns {'OK', job reply...} or {'NOT_FOUND'}.
local member = ARGV[A.member]
local job = load(member)
if not job or job[F_STATE] == EXPIRED then return REPLY.job.NOT_FOUND() end
return answer(member, job)
