-- deps.lua holds jobs that wait for others (lib_deps.lua). Before a job
-- pushed with after is stored, mode register tells each of its
-- dependencies in this bucket of it; once stored (WAITING), each notice of
-- a dependency's end that its timer finds (pool/deps.go) is told to it by
-- mode tell, in its own bucket. Both are safe to repeat.
-- KEYS: the shared layout (contract.lua): no topic in mode register, the
--   waiting job's in mode tell.
-- ARGV:
--       origin, 'register', dependent (member), its topic, members... ->
--       {how each member stands, its result ('' none), ...} (deps.register)
--       origin, 'tell', member, topic, dependency (member), how ('completed',
--       'dead', ...), result ('' none) -> {'OK', its state after (0:
--       unchanged, or removed), its due ms, client id to drop, Redis's
--       clock} or {'ABSENT'} (no such job: not yet stored, or never will
--       be) / {'TOPIC', t}
local mode = ARGV[A.mode]
if mode == 'register' then
  local out = REPLY.deps_register() -- then how, result pairs
  for i = A.register.members, #ARGV do
    local how, result = deps.register(ARGV[i], load(ARGV[i]), ARGV[A.register.dependent], ARGV[A.register.topic])
    out[#out + 1] = how
    out[#out + 1] = result or ''
  end
  return out
end
local member = ARGV[A.tell.member]
local job = load(member)
if not job then return REPLY.deps_tell.ABSENT() end
if job[F_TOPIC] ~= ARGV[A.tell.topic] then return REPLY.deps_tell.TOPIC(job[F_TOPIC]) end
local t = topic_keys(1, job[F_TOPIC])
local now = now_ms()
local result = ARGV[A.tell.result]
local state, cid = deps.told(t, member, job, ARGV[A.tell.dependency], ARGV[A.tell.how], result ~= '' and result or nil, now)
return REPLY.deps_tell.OK(state == '' and 0 or (job[F_STATE] or 0), job[F_DUE] or 0, cid, now)
