-- update_job.lua changes a waiting job (ready or delayed): its delay (due
-- now + delay: ready at once when 0), its priority, its body, each when
-- given. A reserved, buried or dead job is not changed: its consumer or its
-- failure holds it.
-- KEYS: the shared layout (contract.lua) with the job's topic.
-- ARGV: origin, member, topic, delay ms ('' unchanged), priority (''
-- unchanged), body ('' with body_given '' unchanged), body_given ('1': set
-- the body, even to '').
-- A job whose expiry passed (no sweep removed it yet) is expired now.
-- Returns {'OK', job reply...} or {'NOT_FOUND'} / {'TOPIC', t} / {'STATE',
-- state}, or the topic's limits' refusal of the new body: {'TOO_BIG',
-- max_item_size} or {'FULL', 'max_size', the limit}.
local member = ARGV[2]
local t = topic_keys(1, ARGV[3])
local job, err = fetch(member, ARGV[3], 0)
if not job then return err end
local from = job[F_STATE]
if from ~= READY and from ~= DELAYED then return {'STATE', from} end
if (job[F_EXPIRES] or 0) > 0 and job[F_EXPIRES] <= now_ms() then
  expire_job(t, member, job, now_ms()) -- its time ran out before a sweep found it: gone, as for a pop
  return {'NOT_FOUND'}
end
local delay, pri, body, new_body = ARGV[4], ARGV[5], ARGV[6], ARGV[7] == '1'

if new_body then
  local cfg = topic_config(t)
  local max_item = tonumber(cfg.max_item_size or '0')
  if max_item > 0 and #body > max_item then return {'TOO_BIG', max_item} end
  local grown = #body - (job[F_SIZE] or 0)
  local max_bytes = tonumber(cfg.max_size or '0')
  if max_bytes > 0 and grown > 0 and tonumber(redis.call('HGET', t.info, 'bytes') or '0') + grown > max_bytes then
    return {'FULL', 'max_size', max_bytes}
  end
  redis.call('HSET', K_BODIES, member, body)
  job[F_SIZE] = #body
  if grown ~= 0 then add(t.info, 'bytes', grown) end
end
if pri ~= '' then job[F_PRI] = tonumber(pri) end
if delay ~= '' then
  -- Placed afresh: out of its set, settled by the new delay, in again.
  remove_from_state(t, member, job)
  job[F_DELAY] = tonumber(delay)
  settle(job, job[F_DELAY], now_ms())
  enter(t, member, job)
  move_state(from, job[F_STATE])
elseif pri ~= '' and from == READY then
  redis.call('ZADD', t.ready, job[F_PRI], member) -- its place in the queue
end
save(member, job)
return answer(member, job)
