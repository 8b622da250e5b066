-- lib_jobs.lua, after lib_topics.lua (see lib.lua): a job's moves between states,
-- reservation, delete and expiry.

-- expiry indexing. Every ready or delayed job that has an expiry is in its
-- topic's expires set, and the bucket's timer is told to look at the topic
-- then. Jobs leave the set when they are removed; a job reserved or buried
-- stays in it until a sweep finds it there (it cannot expire while a
-- consumer holds it or it is buried) and is indexed again when it returns.
local function index_expiry(t, member, job, write)
  local at = job[F_EXPIRES] or 0
  if at > 0 then
    (write or redis.call)('ZADD', t.expires, at, member)
    schedule(t, at)
    expiring[t.info] = true
  end
end
local function unindex_expiry(t, member, job, write)
  if (job[F_EXPIRES] or 0) > 0 then (write or redis.call)('ZREM', t.expires, member) end
end

-- ready_add puts a job in topic t's ready set (and its group's queue:
-- lib_groups.lua); ready_remove takes it out, other than by a pop. Every
-- path in or out of the ready state goes through them.
local function ready_add(t, member, job, write)
  (write or redis.call)('ZADD', t.ready, job[F_PRI], member)
  groups.add(t, member, job)
end
local function ready_remove(t, member, job, write)
  (write or redis.call)('ZREM', t.ready, member)
  groups.remove(t, member, job)
end

-- remove_from_state takes the member out of the set that holds it in its current state.
local function remove_from_state(t, member, job, write)
  if job[F_STATE] == READY then return ready_remove(t, member, job, write) end
  (write or redis.call)('ZREM', t[STATE_SET[job[F_STATE]]], member)
end

-- make_ready puts a job into its topic's ready queue.
local function make_ready(t, member, job)
  job[F_STATE] = READY
  job[F_DUE] = 0
  ready_add(t, member, job)
  index_expiry(t, member, job)
end

-- wake tells other brokers that n jobs became ready in topic t, but only when
-- some broker has said it has consumers waiting there (the waiting key holds
-- the channel and expires when they are gone).
local function wake(t, n)
  local w = wakes[t.name]
  if w then w[2] = w[2] + n else wakes[t.name] = {t.waiting, n} end
end

-- goes_before says whether a ready job of priority pri and member goes
-- before one of priority other_pri and member other (nil: none): the lower
-- priority first, then the lower member (FIFO: members sort by id).
local function goes_before(pri, member, other_pri, other)
  return other == nil or pri < other_pri or (pri == other_pri and member < other)
end

-- settle decides where a pushed or released job goes: delayed by `delay` ms
-- from `now`, or ready when there is no delay.
local function settle(job, delay, now)
  if delay > 0 then
    job[F_STATE] = DELAYED
    job[F_DUE] = now + delay
  else
    job[F_STATE] = READY
    job[F_DUE] = 0
  end
end

-- OP_ARGS.push.record is the record of a job pushed to topic (its name) at
-- now, settled: what the push's own arguments (lua.Ops["push"]) say of
-- it, each read as args[at + P.<name>], P naming their places (the batch's
-- OP_ARGS.push.at from the push's first argument; push_plain's row A, at
-- 0). All three paths build a pushed job here (batch_push.lua store,
-- lib_lean.lua store, push_plain.lua), so a field a push sets is one line
-- below; what only the general path decides (a group, an expiry, a fanout
-- copy's client id, follow-ups, dependencies, a batch) it sets after.
-- The fields are set in one order on every path: a record with a hole
-- (F_BODY unset) packs as a map, whose order follows the fields' insertion.
-- A field of OP_ARGS.push, not a local: the library's main function holds
-- at most 200 locals. It takes no closure and makes no table but the record.
function OP_ARGS.push.record(args, at, P, topic, now)
  local body, delay = args[at + P.body], tonumber(args[at + P.delay])
  local job = new_record()
  job[F_TOPIC], job[F_PRI], job[F_TTR], job[F_DELAY], job[F_CREATED] = topic, tonumber(args[at + P.priority]),
    tonumber(args[at + P.ttr]), delay, now
  job[F_CID], job[F_SIZE], job[F_RETRY], job[F_TRACE] = args[at + P.client_id], #body, args[at + P.retry], args[at + P.trace]
  if args[at + P.json] == '1' then job[F_JSON] = 1 end
  if args[at + P.keep] ~= '' then job[F_KEEP] = tonumber(args[at + P.keep]) end
  if args[at + P.timeout] ~= '' then job[F_TIMEOUT] = tonumber(args[at + P.timeout]) end
  settle(job, delay, now)
  return job
end

-- The helpers that take `write` make their writes through it: redis.call
-- when it is nil, or batch.lua's gather, which turns many jobs' writes into
-- one command per key.

-- enter adds a settled job to its state's set: a delayed one schedules its
-- bucket's timer, a ready one is announced.
local function enter(t, member, job, write)
  write = write or redis.call
  if job[F_STATE] == WAITING then return write('ZADD', t.after, job[F_CREATED], member) end -- not indexed: it cannot expire before it is ready (lib_deps.lua)
  index_expiry(t, member, job, write)
  if job[F_STATE] == DELAYED then
    write('ZADD', t.delayed, job[F_DUE], member)
    schedule(t, job[F_DUE])
  else
    ready_add(t, member, job, write)
    wake(t, 1)
  end
end

-- push_job stores a pushed job (its record made and settled) of topic t
-- with its body, enters it and counts it, its writes through write: what
-- a push does to its job on both of batch.lua's paths.
local function push_job(t, member, job, body, write)
  note(t, member, job, 'pushed')
  jobbody.keep(member, job, body, true, write)
  write('HSET', K_JOBS, member, cmsgpack.pack(job))
  enter(t, member, job, write)
  count('total_jobs', 1)
  count_topic(t, 'total_jobs', 1)
  move_state(nil, job[F_STATE])
  if #body > 0 then add(t.info, 'bytes', #body) end
end

-- place puts a released job where it belongs.
local function place(t, member, job, delay, now)
  settle(job, delay, now)
  enter(t, member, job)
end

-- change_waiting changes a waiting (ready or delayed) job of topic t: its
-- body (nil: unchanged) and with it F_JSON (json: 1 when the new body is a
-- JSON object or array's text, else 0), its priority (nil: unchanged), its
-- delay (ms, nil: unchanged; else due now + delay, ready at once when 0). size(t) is the
-- bytes of bodies t holds now. It returns the topic's refusal of the new
-- body ({'TOO_BIG', max_item_size} or {'FULL', 'max_size', the limit}) and
-- changes nothing then; else nil and how many bytes the body grew by.
-- update_job.lua (PATCH) and a unique push's replace or debounce use it.
local function change_waiting(t, member, job, delay, pri, body, json, now, size)
  local from, grown = job[F_STATE], 0
  if body then
    local cfg = topic_config(t)
    local max_item = tonumber(cfg.max_item_size or '0')
    if max_item > 0 and #body > max_item then return REPLY.job_call.TOO_BIG(max_item) end
    grown = #body - (job[F_SIZE] or 0)
    local max_bytes = tonumber(cfg.max_size or '0')
    if max_bytes > 0 and grown > 0 and size(t) + grown > max_bytes then return REPLY.job_call.FULL('max_size', max_bytes) end
    jobbody.keep(member, job, body) -- saved with the record below
    job[F_SIZE] = #body
    -- A record written before F_JSON lacks it: given only when it says JSON.
    if json == 1 or job[F_JSON] then job[F_JSON] = json end
    if grown ~= 0 then add(t.info, 'bytes', grown) end
  end
  if pri or delay then
    -- Placed afresh: out of its set (with its old priority, which its
    -- group's queue entry names), settled by the new delay, in again.
    remove_from_state(t, member, job)
    if pri then job[F_PRI] = pri end
    if delay then
      job[F_DELAY] = delay
      settle(job, delay, now)
    end
    enter(t, member, job)
    move_state(from, job[F_STATE])
  end
  save(member, job)
  return nil, grown
end

-- answer is a successful call's reply: 'OK' and the job as it now is, with
-- its body, so callers need no second round trip to show it. ok builds it:
-- REPLY.job.OK unless given (another shape whose OK is the job, then a
-- list the caller appends).
local function answer(member, job, ok)
  return (ok or REPLY.job.OK)(reply(member, job, job[F_BODY] == nil and jobbody.read(member, job), now_ms()))
end

-- refusal says why an operation on a job (nil: there is none) that names
-- the job's topic and a delivery (attempt, 0: any) cannot go ahead: the reply
-- the script must return, or nil.
local function refusal(job, topic, attempt)
  if not job or job[F_STATE] == EXPIRED then return REPLY.job_call.NOT_FOUND() end -- an expired job is gone
  if job[F_TOPIC] ~= topic then return REPLY.job_call.TOPIC(job[F_TOPIC]) end
  -- STALE names the job's state too: a job never delivered (0 reserves) is told so, not "on attempt 0".
  if attempt > 0 and attempt ~= job[F_RESERVES] then return REPLY.job_call.STALE(job[F_RESERVES], job[F_STATE]) end
end

-- fetch loads a job for an operation that names its topic (whose keys were
-- passed) and a delivery. It returns the job, or nil and the reply the
-- script must return.
local function fetch(member, topic, attempt)
  local job = load(member)
  local refused = refusal(job, topic, attempt)
  if refused then return nil, refused end
  return job
end

-- fetch_reserved is fetch for the operations that need a reservation.
local function fetch_reserved(member, topic, attempt)
  local job, err = fetch(member, topic, attempt)
  if job and job[F_STATE] == CANCELLED then return nil, REPLY.job_call.CANCELLED('') end -- its consumer may not have heard
  if job and job[F_STATE] ~= RESERVED then return nil, REPLY.job_call.STATE(job[F_STATE]) end
  return job, err
end

-- read_popped reads the records of the jobs just taken out of a ready set
-- (members, in order) and the bodies their records do not hold: it
-- returns the jobs and member -> body (nil: the record holds it), or nil
-- and an error when a ready member has no record.
local function read_popped(members)
  local records, jobs, in_hash = hmget(K_JOBS, members), {}, {}
  for k, member in ipairs(members) do
    if not records[k] then return nil, 'batch: ' .. member .. ' was ready but has no record' end
    jobs[k] = cmsgpack.unpack(records[k])
    if jobs[k][F_BODY] == nil then in_hash[#in_hash + 1] = member end
  end
  local bodies = {}
  if #in_hash > 0 then
    local got = hmget(K_BODIES, in_hash)
    for k, member in ipairs(in_hash) do bodies[member] = got[k] end
  end
  return jobs, bodies
end

-- reserve_record counts a delivery of a job just taken out of the set of
-- state `from` and records it: reserved until now + TTR, or with a TTR of 0
-- deleted (state 0 in the job). The caller reads the body first. It
-- returns the record as packed and stored (nil when deleted), for reply.
local function reserve_record(t, member, job, from, now, write)
  write = write or redis.call
  job[F_RESERVES] = job[F_RESERVES] + 1
  count('total_reserves', 1)
  count_topic(t, 'total_reserves', 1)
  if job[F_TTR] == 0 then
    if from == READY and groups.on(t) then groups.untake(t, job[F_GROUP] or '') end
    move_state(from, nil)
    drop_bytes(t, job)
    unindex_expiry(t, member, job, write)
    job[F_STATE] = 0
    announce_end(member, job, 'taken')
    write('HDEL', K_JOBS, member)
    jobbody.drop(member, job, write)
    return
  end
  move_state(from, RESERVED)
  groups.reserved(t, job[F_GROUP] or '', 1)
  job[F_STATE] = RESERVED
  job[F_DUE] = now + job[F_TTR]
  note(t, member, job, 'reserved', ORIGIN)
  schedule(t, job[F_DUE])
  write('ZADD', t.reserved, job[F_DUE], member)
  local packed = cmsgpack.pack(job)
  write('HSET', K_JOBS, member, packed)
  return packed
end

-- reserve gives a job (just taken out of the set of state `from`) to a
-- consumer and returns the job reply's values (contract.lua reply).
local function reserve(t, member, job, from, now)
  local body = job[F_BODY] == nil and jobbody.read(member, job) -- false: the record holds it
  return reply(member, job, body, now, reserve_record(t, member, job, from, now))
end

-- delete_job removes a job in any state and counts the delete.
local function delete_job(t, member, job, write)
  write = write or redis.call
  remove_from_state(t, member, job, write)
  write('HDEL', K_JOBS, member)
  jobbody.drop(member, job, write)
  move_state(job[F_STATE], nil)
  drop_bytes(t, job)
  unindex_expiry(t, member, job, write)
  count('total_deletes', 1)
  count_topic(t, 'total_deletes', 1)
end

-- expire_job ends a ready or delayed job whose time ran out: it leaves its
-- topic (counted in total_expired) and is either removed or, when the topic
-- has an expire_to, kept in the bucket's outbox (state EXPIRED, its record
-- naming the new topic) until a bucket timer pushes it there afresh.
local function expire_job(t, member, job, now)
  local from = job[F_STATE]
  remove_from_state(t, member, job)
  redis.call('ZREM', t.expires, member)
  move_state(from, nil)
  drop_bytes(t, job)
  count('total_expired', 1)
  count_topic(t, 'total_expired', 1)
  local cid = job[F_CID] or ''
  if cid ~= '' then
    dropped_cids[#dropped_cids + 1] = member
    dropped_cids[#dropped_cids + 1] = cid
  end
  announce_end(member, job, 'expired')
  local to = topic_config(t).expire_to or ''
  note(t, member, job, 'expired', to)
  if to ~= '' and to ~= t.name then
    job[F_STATE] = EXPIRED
    job[F_TOPIC] = to
    job[F_DUE] = 0
    job[F_CID] = ''
    save(member, job)
    redis.call('ZADD', K_OUTBOX, now, member)
    redis.call('ZADD', K_DUE, 'LT', now, OUTBOX_DUE)
    return
  end
  redis.call('HDEL', K_JOBS, member)
  jobbody.drop(member, job)
end

-- sweep_expired expires up to n of topic t's jobs whose time ran out and
-- unlists the reserved, buried or gone ones it meets. It returns how many
-- entries it looked at (fewer than n: none that is due is left) and how many
-- jobs it expired.
local function sweep_expired(t, now, n)
  local due = redis.call('ZRANGEBYSCORE', t.expires, '-inf', now, 'LIMIT', 0, n)
  if #due == 0 then return 0, 0 end
  local records = redis.call('HMGET', K_JOBS, unpack(due))
  local expired = 0
  for k, member in ipairs(due) do
    local job = records[k] and cmsgpack.unpack(records[k])
    if job and job[F_TOPIC] == t.name and (job[F_STATE] == READY or job[F_STATE] == DELAYED) then
      expire_job(t, member, job, now)
      expired = expired + 1
    else
      redis.call('ZREM', t.expires, member)
    end
  end
  return #due, expired
end
