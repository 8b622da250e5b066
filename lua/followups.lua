-- followups.lua keeps the follow-ups of acks: the jobs an ack asked to push
-- once it succeeds ("push": [...], docs/workflows.md). The ack stores them
-- in its job's bucket in the same call (mode ack), so the ack and its
-- follow-ups happen together or not at all; the broker that acked pushes
-- them at once, and the bucket's timer, finding FOLLOWUPS_DUE due after a
-- grace, takes those still here (take): each is pushed to its topic with a
-- marker a second push of it finds (pool/followups.go), then the ones
-- pushed are removed (done) and the ones their topic refused for now put
-- off (later). A crash between a push and its 'done' pushes it again, which
-- the marker refuses: each follow-up is made once.
-- Only a store at format 4 holds follow-ups (pool/format.go): an older
-- broker's timer would not know FOLLOWUPS_DUE.
-- KEYS: the shared layout (contract.lua), with the acked job's topic in
--   mode ack; the bucket's follow-ups are K_FOLLOWUPS (zset: id -> ms it is
--   due) and K_FOLLOWUP_SPECS (hash: id -> the follow-up as the pool
--   encodes it, opaque here; or a notice to a waiting job, lib_deps.lua).
-- ARGV:
--       origin, 'ack', member, topic, attempt (0: unfenced), result ('' none), entries (the ack's
--       follow-ups, JSON [[id, spec], ...]; '': none; the job's own F_THEN are kept too), grace (ms:
--       they are due then, so the acking broker pushes them itself first, and a timer only if it
--       did not) -> {'OK', client id to drop, the dropped of max_completed (batch.lua's delete), how long
--       (ms) the job is kept completed (0: not kept),
--       then each follow-up kept, the job's own (its F_THEN) and the ack's: its id and its spec as
--       kept (with the result: outcomes.follow_up)}, or
--       {'OK', '', '', 'again'} when the job was completed already, by an earlier ack, which stored
--       its follow-ups (these are not), or the ack's refusal (batch.lua's delete: nothing stored then)
--       origin, 'take', n, lease -> {id, spec, ...}: up to n follow-ups due now, soonest first,
--         each due again lease ms on (done or later settles it first)
--       origin, 'done', ids... -> how many follow-ups are left
--       origin, 'later', ms, max, ids... -> how many are left: those ids due again, each ms after its
--       first refusal, doubled at each next one, at most max ms (counted in specs' '#tries ID')
local FOLLOWUPS_DUE = '@followups' -- pool/followups.go followupsDue
local mode = ARGV[A.mode]
local list, specs = K_FOLLOWUPS, K_FOLLOWUP_SPECS
local now = now_ms()

-- due says when the bucket's timer looks at the follow-ups again: at the
-- soonest one's time, or never when none is left.
local function due()
  local first = redis.call('ZRANGE', list, 0, 0, 'WITHSCORES')
  if #first == 0 then
    redis.call('ZREM', K_DUE, FOLLOWUPS_DUE)
    return 0
  end
  redis.call('ZADD', K_DUE, first[2], FOLLOWUPS_DUE)
  return redis.call('ZCARD', list)
end

if mode == 'ack' then
  local member = ARGV[A.ack.member]
  local t = topic_keys(1, ARGV[A.ack.topic])
  local record = redis.call('HGET', K_JOBS, member)
  local job = record and cmsgpack.unpack(record)
  if job and job[F_STATE] == COMPLETED and job[F_TOPIC] == t.name then -- by an earlier ack: of this delivery?
    return refusal(job, t.name, tonumber(ARGV[A.ack.attempt])) or REPLY.followups_ack.OK('', '', 'again')
  end
  local due, kept, result = now + tonumber(ARGV[A.ack.grace]), {}, ARGV[A.ack.result] -- kept: the follow-ups kept
  local follow = function(entries) outcomes.follow_up(entries, due, result, kept) end
  local cid, refused, _, dropped, keep = ack_job(t, member, record, tonumber(ARGV[A.ack.attempt]), 'ack', result, redis.call,
    follow)
  if refused then return refused end
  if ARGV[A.ack.entries] ~= '' then follow(ARGV[A.ack.entries]) end
  return REPLY.followups_ack.OK(cid, dropped, keep, unpack(kept))
end
if mode == 'take' then
  -- Each one taken is due again only lease ms on: the taker's done (or
  -- later) settles it first, so that timers of several brokers, nudged at
  -- once, take other follow-ups rather than the same ones twice; one whose
  -- taker died is taken again then.
  local out, again = REPLY.followups_take(), now + tonumber(ARGV[A.take.lease]) -- then id, spec pairs
  for _, id in ipairs(redis.call('ZRANGE', list, '-inf', now, 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[A.take.n]))) do
    local spec = redis.call('HGET', specs, id)
    if spec then
      out[#out + 1] = id
      out[#out + 1] = spec
      redis.call('ZADD', list, 'XX', again, id)
    else
      redis.call('ZREM', list, id) -- no spec (cannot happen): nothing to push
    end
  end
  due()
  return out
end
-- TRIES starts the field of specs that counts a follow-up's refusals.
local TRIES = '#tries '
if mode == 'later' then
  -- Backed off: ms after its first refusal, twice that after the next...,
  -- at most max ms, so one its topic never takes costs little.
  local first, most = tonumber(ARGV[A.later.ms]), tonumber(ARGV[A.later.max])
  for i = A.later.ids, #ARGV do
    if redis.call('HEXISTS', specs, ARGV[i]) == 1 then
      local n = redis.call('HINCRBY', specs, TRIES .. ARGV[i], 1)
      redis.call('ZADD', list, now + math.min(first * 2 ^ math.min(n - 1, 30), most), ARGV[i])
    end
  end
  return due()
end
for i = A.done.ids, #ARGV do
  redis.call('ZREM', list, ARGV[i])
  redis.call('HDEL', specs, ARGV[i], TRIES .. ARGV[i])
end
return due()
