-- batch.lua runs a bucket's pushes, pops and acks in one script call. The
-- pool gathers the operations on a bucket that arrive while its earlier calls
-- are in flight (pool/batch.go). Operations that arrive together are
-- concurrent, so any order of them is a correct one; this script runs all the
-- pushes (in their order), then all the deletes, then all the pops, and makes
-- each phase's writes as one command per key (HSET jobs with every record,
-- ZADD with every member...). So under load Redis pays for a script call, and
-- for most of its commands, once per batch instead of once per job. Each
-- operation is as atomic as the batch.
-- KEYS: the shared layout (contract.lua) with every topic the operations name.
-- ARGV: origin, n, the n topic names (in KEYS order), then the operations,
--   each as: kind, k, k topic numbers (1-based, into the names above), then
--   the kind's arguments, named by OP_ARGS (lua/contract.go Ops) and read
--   into op.a.<name>:
--   push     member, priority, ttr (ms), delay (ms), body, client_id ('' for none), expires (ms, 0: never;
--            the topic's max_age caps it), retry (its policy, '' the topic's; lib_failures.lua retry_policy), trace
--            (W3C traceparent, '' none), ..., json ('1': the body is a JSON object or array's text, F_JSON;
--            a fanout child's copy and a replaced job take it with the body), then a member for each of
--            its fanout children (its topics after the first; op.children) -> {'OK', now ms, due ms (0
--            when ready), 1 if the topic kept a copy (0: fanout_only), then member and client id of each
--            job discarded to make room}, or {'EXISTS'} when the member is taken, or the topic's limits'
--            refusal: {'FULL', 'max_items' or 'max_size', the limit} or {'TOO_BIG', max_item_size}, or
--            {'CHILDREN', names...} when the children given are not the topic's (nothing stored: ask
--            again with those)
--   delete   member, attempt (0: unfenced), mode ('unreserved' to refuse a reserved job, '' otherwise)
--            -> {'OK', client id}, or {'NOT_FOUND'} / {'TOPIC', real topic} / {'STALE', reserves} / {'STATE', 3}
--   pop      mode ('first', 'best', 'peek' or 'take': 'first', the job removed as it is
--            popped whatever its TTR), more ('1': say whether the topic has more ready jobs, else
--            more is 0) -> a pop reply (below)
--   pop_n    mode ('first' or 'best'), n, more: up to n pops -> {'JOBS', more, k, k job replies (lib's
--            reply, flat)}, or the EMPTY reply when there was none
--   ack_pop  member, attempt, more: delete the job, then pop 'first' from the other topics
--            -> {'OK', client id, pop reply...}, or delete's refusal (nothing popped then)
--   The first topic of push, delete and ack_pop is the job's.
-- A pop reply is {'OK', more, job reply...} where more is 1 when the topic
-- still has ready jobs (a TTR of 0 deletes the job as it is popped: state 0
-- in the reply); in peek mode {'PEEK', topic, priority, member}; otherwise
-- {'EMPTY', ms until the earliest pause with ready jobs ends, or -1, that
-- topic ('' none), and the first topic whose limits held its ready jobs
-- back ('' none)}. Mode
-- 'first' takes the best job of the first topic that has one (gmq's order),
-- 'best' the lowest (priority, id) among them all (beanstalkd's), 'peek' only
-- says which job 'best' would take. Within a topic: lowest priority first,
-- FIFO by id (members sort by id). Paused topics are skipped, and so are
-- topics whose rate or max_reserved holds (lib_limits.lua): the EMPTY
-- reply's wait is then also until a limited topic's next token.
-- Returns one reply per operation, in the operations' order, then, when a
-- pop expired jobs that had client ids, {'DROPPED', member, client id, ...}.
-- Expired jobs are never popped: a pop first sweeps each topic it looks at;
-- if that sweep is cut short (a swarm of jobs expired at once) the topic is
-- left for this call and the pop's EMPTY reply asks for a retry in 1 ms.
--
-- Where to look: parse reads the operations; push_phase, delete_phase and
-- pop_phase run the phases; a pop is decided in choose (which topics are
-- open, and which job each pop takes); main, at the end, runs them.

-- In gmq's library the file's functions are defined once, when the
-- library is loaded, and main (at the end) runs on each call: so what one
-- call keeps is declared bare here and set by main (TestScriptStateIsPerCall).

local paused -- topic name -> paused_until ms, read once per call
local may_expire -- topic name -> true when a job that expires ever entered it
local token_fields -- topic name -> its info's tokens and tokens_at (lib_limits.lua)
local function paused_until(t)
  local ms = paused[t.name]
  if not ms then
    local info = redis.call('HMGET', t.info, 'paused_until', 'expiring', 'tokens', 'tokens_at')
    ms = tonumber(info[1] or '0')
    paused[t.name] = ms
    may_expire[t.name] = info[2] ~= false or expiring[t.info]
    token_fields[t.name] = {info[3], info[4]}
  end
  return ms
end

-- now is Redis's clock, one instant for the whole call.
local now

-- limits_for is topic t's limits in this call (lib_limits.lua limits).
local function limits_for(t)
  paused_until(t)
  local f = token_fields[t.name]
  return limits(t, f[1], f[2], now)
end

-- parse reads the operations of ARGV (above): each {kind, ts = its topics'
-- keys, a = its arguments by name, children = a push's fanout members}.
local function parse()
  local topics = {}
  local n = tonumber(ARGV[A.n])
  for i = 1, n do topics[i] = topic_keys(i, ARGV[A.topics - 1 + i]) end
  local ops = {}
  local i = A.topics + n
  while i <= #ARGV do
    local kind = ARGV[i]
    local names = OP_ARGS[kind]
    if not names then return nil, 'batch: unknown operation ' .. tostring(kind) end
    local op = {kind = kind, ts = {}}
    for j = 1, tonumber(ARGV[i + 1]) do op.ts[j] = topics[tonumber(ARGV[i + 1 + j])] end
    i = i + 2 + #op.ts
    op.a = names.read(ARGV, i)
    i = i + #names
    if kind == 'push' then -- a member for each fanout child
      op.children = {}
      for j = 2, #op.ts do
        op.children[j - 1] = ARGV[i]
        i = i + 1
      end
    end
    ops[#ops + 1] = op
  end
  return ops
end

-- of_kinds lists the operations of kind a (or b), in order.
local function of_kinds(ops, a, b)
  local out = {}
  for _, op in ipairs(ops) do
    if op.kind == a or op.kind == b then out[#out + 1] = op end
  end
  return out
end

-- records_of reads the records of the jobs the operations name (op.a.member), at once.
local function records_of(list)
  local members = {}
  for k, op in ipairs(list) do members[k] = op.a.member end
  return hmget(K_JOBS, members)
end

-- reference_named: every topic an operation names that is a fanout child is listed under its
-- parent; not the children a push was given (a broker's list of them may be
-- stale: one deleted since must not come back).
local function reference_named(ops)
  for _, op in ipairs(ops) do
    local named = #op.ts
    if op.kind == 'push' then named = 1 end
    for j = 1, named do reference(op.ts[j], now, op.kind ~= 'push') end
  end
end

-- The push phase's helpers are in a block: the library's main function may hold 200 locals.
local held, bytes, discards, listed -- a push phase's state (below)
local plain_of -- topic name -> whether a push to it may take the short path (plain_topic, below)
local push_phase

do
-- A topic's limits (its settings: lib.lua topic_config). held counts the
-- jobs a topic holds in any state (dead ones too), read once per call and kept as pushes
-- and discards change it (the pushes' own writes are gathered, unread).
-- (held, bytes: declared above the block)
-- size is the bytes of bodies topic t holds, read once per call and kept.
local function size(t)
  if not bytes[t.name] then bytes[t.name] = tonumber(redis.call('HGET', t.info, 'bytes') or '0') end
  return bytes[t.name]
end
local function holds(t)
  if not held[t.name] then
    held[t.name] = redis.call('ZCARD', t.ready) + redis.call('ZCARD', t.delayed) +
      redis.call('ZCARD', t.reserved) + redis.call('ZCARD', t.buried) + redis.call('ZCARD', t.dead)
  end
  return held[t.name]
end

-- discard_head removes topic t's next ready job (the head of its queue) to
-- make room, and returns its member and client id, or nil if none is ready.
local function discard_head(t)
  local head = redis.call('ZPOPMIN', t.ready)
  if not head[1] then
    gathers.flush() -- this call's earlier pushes may be the head: write them, look again
    head = redis.call('ZPOPMIN', t.ready)
  end
  if not head[1] then return nil end
  local member = head[1]
  local record = redis.call('HGET', K_JOBS, member)
  redis.call('HDEL', K_JOBS, member)
  if not record then jobbody.drop(member, nil) end
  move_state(READY, nil)
  count('total_discarded', 1)
  count_topic(t, 'total_discarded', 1)
  held[t.name] = holds(t) - 1
  local cid = ''
  if record then
    local job = cmsgpack.unpack(record)
    jobbody.drop(member, job)
    groups.remove(t, member, job)
    cid = job[F_CID] or ''
    drop_bytes(t, job)
    unindex_expiry(t, member, job)
    bytes[t.name] = size(t) - (job[F_SIZE] or 0)
  end
  return member, cid
end

-- admit says why a push of body to topic t is refused ({'TOO_BIG', limit}
-- or {'FULL', limit}), or nil; with discard_old_when_full it makes room by
-- discarding the topic's head (recorded in op.discarded by the caller).
-- discards: the current push's discarded member, client id pairs (declared above the block)
local function admit(t, body)
  local cfg = topic_config(t)
  local max_item = tonumber(cfg.max_item_size or '0')
  if max_item > 0 and #body > max_item then return {R.TOO_BIG, max_item} end
  local max_items, max_bytes = tonumber(cfg.max_items or '0'), tonumber(cfg.max_size or '0')
  if max_bytes > 0 and #body > max_bytes then return {R.FULL, 'max_size', max_bytes} end -- no room could ever be made
  local function full()
    if max_items > 0 and holds(t) >= max_items then return {R.FULL, 'max_items', max_items} end
    if max_bytes > 0 and size(t) + #body > max_bytes then return {R.FULL, 'max_size', max_bytes} end
  end
  local refused = full()
  if not refused or cfg.discard_old_when_full ~= 'true' then return refused end
  while refused do
    local member, cid = discard_head(t)
    if not member then return refused end -- nothing ready to drop: all held by consumers or delayed
    discards[#discards + 1] = member
    discards[#discards + 1] = cid
    refused = full()
  end
  return nil
end

-- expiry is when a job pushed to topic t now expires (0: never): the
-- producer's time, capped by the topic's max_age (seconds).
local function expiry(t, at)
  local max_age = tonumber(topic_config(t).max_age or '0')
  if max_age > 0 and (at == 0 or at > now + max_age * 1000) then at = now + max_age * 1000 end
  return at
end

-- store writes a new job (its writes gathered) and counts it.
-- listed: topic name -> its keys: topics that got a job (declared above the block)
local function store(t, member, a, cid, expires, group)
  local delay = tonumber(a.delay)
  local job = new_record()
  job[F_GROUP] = group
  job[F_TOPIC], job[F_PRI], job[F_TTR], job[F_DELAY], job[F_CREATED] = t.name, tonumber(a.priority), tonumber(a.ttr), delay, now
  job[F_CID], job[F_SIZE], job[F_EXPIRES], job[F_RETRY], job[F_TRACE] = cid, #a.body, expires, a.retry, a.trace
  if a.json == '1' then job[F_JSON] = 1 end
  settle(job, delay, now)
  push_job(t, member, job, a.body, gathers.add)
  listed[t.name] = t
  if held[t.name] then held[t.name] = held[t.name] + 1 end
  if bytes[t.name] then bytes[t.name] = bytes[t.name] + #a.body end
  return job
end

-- fanout_refusal says, for a push to topic t whose op declared the children
-- in op.ts[2..], {'CHILDREN', the real ones...} if those are not t's
-- children now (the pool asks again with them), or nil.
local function fanout_refusal(op, t)
  local want = fanout_children(t.name)
  local declared = {}
  for j = 2, #op.ts do declared[op.ts[j].name] = true end
  local same = #want == #op.ts - 1
  for _, name in ipairs(want) do
    if not declared[name] then same = false end
  end
  if same then return nil end
  local r = {R.CHILDREN}
  for _, name in ipairs(want) do r[#r + 1] = name end
  return r
end

-- unique_refusal says, for a push to topic t, {'UNIQUE_FROM', 'body' or
-- 'none'} when its key does not follow t's unique_from now (the pool,
-- whose memory of the setting was stale, asks again), or {'UNIQUE_FANOUT'}
-- for a unique push to a topic with fanout children (a key names one job;
-- a key from unique_from is then not used: op.keyless), or nil.
local function unique_refusal(op, t)
  local a = op.a
  local by_body = topic_config(t).unique_from == 'body'
  if a.unique_mode == 'topic' and not by_body then return {R.UNIQUE_FROM, 'none'} end
  if by_body and a.unique_key == '' then return {R.UNIQUE_FROM, 'body'} end
  if a.unique_key ~= '' and #op.ts > 1 then
    -- A key names one job and this push makes several: a push's own key is
    -- refused; the topic's unique_from does not apply (op.keyless).
    if a.unique_mode ~= 'topic' then return {R.UNIQUE_FANOUT} end
    op.keyless = true
  end
end

-- by_key settles a unique push (op.a.unique_key: its key's place in KEYS)
-- with the job that holds its key, if one does. It returns the reply when
-- that settles it: {'UNIQUE', holder, its client id} (mode reject),
-- {'REPLACED' or 'DEBOUNCED', holder, now, due ms (0: ready), its client
-- id} (a waiting job changed, the key held for its window again), or the
-- topic's refusal of a replacing body. nil: the push stores a fresh job,
-- which takes the key (op.ukey, for op.ufor ms). pushed: the members this
-- call stored (their records are among the gathered writes).
local function by_key(op, t, pushed)
  local a = op.a
  local key, mode, window = op_key(a.unique_key), a.unique_mode, tonumber(a.unique_for)
  if mode == 'topic' then -- the body's hash, as t's unique_from says: t's window and mode
    local cfg = topic_config(t)
    mode, window = cfg.unique_mode or 'reject', tonumber(cfg.unique_for or DEFAULT_UNIQUE_FOR) * 1000
  end
  local taken = redis.call('GET', key) -- the holder's member and client id (so a 409 names it when it is gone)
  if taken then
    local holder, cid = string.match(taken, '^(%S+) ?(.*)$')
    if pushed[holder] then gathers.flush() end
    local job = load(holder)
    if mode == 'reject' then return {R.UNIQUE, holder, cid} end
    local waiting = job and job[F_TOPIC] == t.name and (job[F_STATE] == READY or job[F_STATE] == DELAYED)
    if waiting and (job[F_EXPIRES] or 0) > 0 and job[F_EXPIRES] <= now then
      local before = size(t) -- read before the expiry, whose byte count is a deferred write
      expire_job(t, holder, job, now) -- its time ran out before a sweep found it: gone
      bytes[t.name] = before - (job[F_SIZE] or 0)
      if held[t.name] then held[t.name] = held[t.name] - 1 end
      waiting = false
    end
    if waiting then -- a reserved or finished job is never changed: a fresh one takes the key
      local pri, body, status, expires = nil, nil, R.DEBOUNCED, job[F_EXPIRES]
      if mode == 'replace' then
        -- The push's job in the waiting one's place: its body, delay,
        -- priority, TTR, expiry and retry policy, its failures forgotten.
        pri, body, status = tonumber(a.priority), a.body, R.REPLACED
        unindex_expiry(t, holder, job)
        job[F_TTR], job[F_EXPIRES], job[F_RETRY] = tonumber(a.ttr), expiry(t, tonumber(a.expires)), a.retry
        job[F_FAILURES], job[F_LAST_ERROR] = 0, ''
      end
      local refused, grown = change_waiting(t, holder, job, tonumber(a.delay), pri, body, a.json == '1' and 1 or 0, now, size)
      if refused then -- nothing saved: its expiry indexed again
        job[F_EXPIRES] = expires
        index_expiry(t, holder, job)
        return refused
      end
      if bytes[t.name] then bytes[t.name] = bytes[t.name] + grown end
      redis.call('PEXPIRE', key, window)
      return {status, holder, now, job[F_DUE], cid}
    end
  end
  op.ukey, op.ufor = key, window
end

-- make_grouped is groups.make after this call's gathered writes: the
-- topic's ready jobs that join the group '' include this call's pushes.
local function make_grouped(t)
  if groups.on(t) then return nil end
  gathers.flush()
  return groups.make(t)
end

-- group_of is the group of a push to topic t: the producer's, or, with
-- none and the topic's group_from naming a field, that field of the body
-- when the body is a JSON object and the field a string or number that
-- makes a group name ('' otherwise: no group).
local function group_of(t, a)
  if a.group ~= '' then return a.group end
  local field = topic_config(t).group_from or ''
  if field == '' then return '' end
  local ok, doc = pcall(cjson.decode, a.body)
  if not ok or type(doc) ~= 'table' then return '' end
  local v = doc[field]
  if type(v) == 'number' then -- a whole number JSON holds exactly, written out in full
    if v ~= v or math.floor(v) ~= v or math.abs(v) >= 2 ^ 53 then return '' end
    v = string.format('%.0f', v)
    if v == '-0' then v = '0' end
  end
  if type(v) ~= 'string' or not groups.name_ok(v) then return '' end
  return v
end

-- fire_refusal makes a push that is a schedule's fire (op.a.schedule_key:
-- the place of the schedule's hash in KEYS) happen once: {'FIRED'} when
-- the schedule's next fire is no longer the one its broker read (another
-- fired it, or it was changed); else the schedule moves to its next fire
-- (its due entry with it) and its lateness is counted, and with overlap
-- skip, {'SKIPPED', member} while its last job waits or is reserved. A
-- fire that goes on is noted in op.fired (its job is noted once stored).
local function fire_refusal(op, t)
  local a = op.a
  if a.schedule_key == '' then return nil end
  local key = op_key(a.schedule_key)
  if redis.call('HGET', key, 'next') ~= a.schedule_due then return {R.FIRED} end
  local due = SCHEDULE_DUE .. a.schedule_name
  redis.call('HSET', key, 'next', a.schedule_next)
  if tonumber(a.schedule_next) > 0 then
    redis.call('ZADD', K_DUE, a.schedule_next, due)
  else
    redis.call('ZREM', K_DUE, due)
  end
  if tonumber(a.schedule_due) > 0 and a.schedule_next ~= a.schedule_due then -- not a fire now: it has no due time
    redis.call('HINCRBY', key, 'late_ms', math.max(now - tonumber(a.schedule_due), 0))
  end
  if a.overlap == 'skip' then
    local last = redis.call('HGET', key, 'last_id')
    local job = last and load(last)
    if job and job[F_TOPIC] == t.name and (job[F_STATE] == READY or job[F_STATE] == DELAYED or job[F_STATE] == RESERVED) then
      redis.call('HINCRBY', key, 'skips', 1)
      return {R.SKIPPED, last}
    end
  end
  op.fired = key
end


-- plain_topic says, once a call, whether topic t uses no setting a push
-- looks at and has no fanout children: then a push that brings no unique
-- key, no group and no schedule needs none of the refusals and limits
-- above, and only stores its job.
local function plain_topic(t)
  local p = plain_of[t.name]
  if p == nil then
    p = not lean.sets_any(topic_config(t), lean.push_settings) and #fanout_children(t.name) == 0
    plain_of[t.name] = p
  end
  return p
end

-- push_phase runs the pushes, in order (phase 1). A push to a parent topic stores a copy for
-- each child (each under the child's own limits: a child that refuses it
-- misses it, as in kestrel), and none in the parent itself when the parent
-- is fanout_only.
function push_phase(ops)
  local pushes = of_kinds(ops, 'push')
  if #pushes > 0 then
    local taken = records_of(pushes)
    local seen = {}
    for k, op in ipairs(pushes) do
      local t, a, member = op.ts[1], op.a, op.a.member
      local keep = topic_config(t).fanout_only ~= 'true'
      discards = {}
      local short = #op.ts == 1 and a.unique_key == '' and a.schedule_key == '' and a.group == '' and plain_topic(t)
      if taken[k] or seen[member] then
        op.reply = {R.EXISTS}
      elseif short then
        seen[member] = true
        local due = store(t, member, a, a.client_id, tonumber(a.expires), '')[F_DUE]
        op.reply = {R.OK, now, due, 1}
      else
        -- The refusals that ask the pool to push again come before a
        -- schedule's fire, which happens once (a push asked again would
        -- find it fired).
        op.reply = fanout_refusal(op, t) or unique_refusal(op, t) or fire_refusal(op, t)
        if not op.reply and a.unique_key ~= '' and not op.keyless then op.reply = by_key(op, t, seen) end
        if not op.reply and keep then
          op.group = group_of(t, a)
          if op.group ~= '' then op.reply = make_grouped(t) end
        end
        if not op.reply and keep then op.reply = admit(t, a.body) end
        local status = op.reply and op.reply[1]
        if op.fired and (status == R.FULL or status == R.TOO_BIG or status == R.UNIQUE or status == R.GROUP_BACKLOG) then
          redis.call('HINCRBY', op.fired, 'refused', 1) -- a refusal: the schedule's fire made no job
        end
        if op.reply and op.fired and (op.reply[1] == R.REPLACED or op.reply[1] == R.DEBOUNCED) then
          -- its job's unique key changed the waiting job that holds it: that job is this fire's
          redis.call('HSET', op.fired, 'last', now, 'last_id', op.reply[2])
          redis.call('HINCRBY', op.fired, 'fires', 1)
        end
      end
      if not op.reply and not short then
        seen[member] = true
        local due = 0
        if keep then due = store(t, member, a, a.client_id, expiry(t, tonumber(a.expires)), op.group)[F_DUE] end
        if keep and op.ukey then redis.call('SET', op.ukey, member .. ' ' .. a.client_id, 'PX', op.ufor) end
        if op.fired then
          redis.call('HSET', op.fired, 'last', now, 'last_id', member)
          redis.call('HINCRBY', op.fired, 'fires', 1)
        end
        for j = 2, #op.ts do
          local child = op.ts[j]
          local group = group_of(child, a)
          if (group == '' or not make_grouped(child)) and not admit(child, a.body) then
            local copy = store(child, op.children[j - 1], a, '', expiry(child, tonumber(a.expires)), group)
            if not keep then due = copy[F_DUE] end
          end
        end
        op.reply = {R.OK, now, due, keep and 1 or 0}
        for _, d in ipairs(discards) do op.reply[#op.reply + 1] = d end
      end
    end
    for _, t in pairs(listed) do count_pushes(t, now) end -- registration once (lib_topics.lua)
    gathers.flush()
  end
end
end

-- delete_phase runs the deletes, and the ack of each ack_pop, in order (phase 2).
local function delete_phase(ops)
  local deletes = of_kinds(ops, 'delete', 'ack_pop')
  if #deletes > 0 then
    local records = records_of(deletes)
    local gone = {}
    for k, op in ipairs(deletes) do
      local member = op.a.member
      local cid, refused = ack_job(op.ts[1], member, not gone[member] and records[k] or nil, tonumber(op.a.attempt),
        op.a.mode == 'unreserved', gathers.add)
      if refused then
        op.reply = refused
      else
        gone[member] = true
        op.acked, op.cid = true, cid
        if op.kind == 'delete' then op.reply = {R.OK, cid} end
      end
    end
    gathers.flush()
  end
end

-- The pop phase's helpers are in a block too.
local picks, sweeps -- the pop phase's state (below)
local pop_phase, pop_replies

do
-- Phase 3, the pops (pop_phase). First each pop takes its members out of the ready sets
-- (so no other pop can take them), then all their records and bodies are
-- read at once, reserved, and written back at once.
-- picks: {op, topic, member}, in pop order (declared above the block)
local function pick(op, t, member)
  picks[#picks + 1] = {op = op, t = t, member = member}
  op.got = op.got + 1
end

-- swept expires topic t's jobs whose time ran out before a pop looks at it,
-- once per call, at most POP_SWEEP of them: false when more are left.
local POP_SWEEP = 1000
-- sweeps: topic name -> whether its sweep this call left none due (declared above the block)
local function swept(t)
  if not may_expire[t.name] then return true end
  if sweeps[t.name] == nil then sweeps[t.name] = sweep_expired(t, now, POP_SWEEP) < POP_SWEEP end
  return sweeps[t.name]
end

-- choose takes up to want jobs for op from topics ts, in mode's order:
-- from the topics that are not paused and whose limits (lib_limits.lua)
-- let it take one. op.pause_wait is how long until one that has ready jobs
-- opens (its pause ends, its rate gives a token), or -1.
local function choose(op, ts, mode, want)
  local open = {}
  op.pause_wait, op.pause_topic, op.held_by = -1, '', ''
  local function wait_at_most(ms, t)
    if ms >= 0 and (op.pause_wait < 0 or ms < op.pause_wait) then op.pause_wait, op.pause_topic = ms, t.name end
  end
  -- held_back notes that grouped topic t's ready jobs are all in groups
  -- their limits hold back (the next token in wait ms, or -1).
  local function held_back(t, wait)
    if redis.call('ZCARD', t.group_ready) == 0 then return end
    count_topic(t, 'total_limited', 1)
    if op.held_by == '' then op.held_by = t.name end
    wait_at_most(wait, t)
  end
  for _, t in ipairs(ts) do
    local until_ms = paused_until(t)
    if until_ms <= now and not swept(t) then
      wait_at_most(1, t) -- its expired jobs are not all gone yet: look again at once
    elseif until_ms <= now then
      local n, wait = room(limits_for(t), op.take)
      if n > 0 then
        open[#open + 1] = t
      elseif redis.call('ZCARD', t.ready) > 0 then
        count_topic(t, 'total_limited', 1) -- held back by a limit
        if op.held_by == '' then op.held_by = t.name end
        wait_at_most(wait, t)
      end
    elseif redis.call('ZCARD', t.ready) > 0 then
      wait_at_most(until_ms - now, t)
    end
  end
  if mode == 'first' or (mode == 'best' and #open == 1) then
    -- Each topic's head is its best job, so take the first topics' heads.
    for _, t in ipairs(open) do
      local left = want - op.got
      if left <= 0 then break end
      local l = limits_of[t.name]
      local n = math.min(left, (room(l, op.take)))
      if groups.on(t) then -- round-robin over its groups (lib_groups.lua)
        local got = 0
        while got < n do
          local entry, wait = groups.head(t, now, op.take)
          if not entry then
            if got == 0 then held_back(t, wait) end
            break
          end
          pick(op, t, groups.take(t, entry, now, op.take))
          got = got + 1
        end
        took(l, got, op.take)
      else
        local heads = redis.call('ZPOPMIN', t.ready, n)
        for h = 1, #heads, 2 do pick(op, t, heads[h]) end
        took(l, #heads / 2, op.take)
      end
    end
    return
  end
  while op.got < want do
    local best, best_pri, member
    local entries = {} -- grouped topic name -> the queue entry of its candidate
    for _, t in ipairs(open) do
      local head = {}
      if room(limits_of[t.name], op.take) > 0 then
        if groups.on(t) then
          local entry, wait = groups.head(t, now, op.take)
          if entry then
            local _, pri, m = groups.parts(entry)
            head, entries[t.name] = {m, pri}, entry
          elseif op.got == 0 then
            held_back(t, wait)
          end
        else
          head = redis.call('ZRANGE', t.ready, 0, 0, 'WITHSCORES')
        end
      end
      if head[1] then
        local pri = tonumber(head[2])
        if goes_before(pri, head[1], best_pri, member) then best, best_pri, member = t, pri, head[1] end
      end
    end
    if not best then return end
    if mode == 'peek' then
      op.reply = {R.PEEK, best.name, best_pri, member}
      return
    end
    if entries[best.name] then
      groups.take(best, entries[best.name], now, op.take)
    else
      redis.call('ZREM', best.ready, member)
    end
    pick(op, best, member)
    took(limits_of[best.name], 1, op.take)
  end
end

-- pop_phase decides every pop (choose), then reserves what they took at
-- once; it returns the operations that popped, in order.
function pop_phase(ops)
  local pops = {}
  for _, op in ipairs(ops) do
    op.got = 0
    if op.kind == 'pop' and op.a.mode == 'take' then
      op.take = true -- removed as it is popped, whatever its TTR
      choose(op, op.ts, 'first', 1)
    elseif op.kind == 'pop' then
      choose(op, op.ts, op.a.mode, 1)
    elseif op.kind == 'pop_n' then
      choose(op, op.ts, op.a.mode, tonumber(op.a.n))
    elseif op.kind == 'ack_pop' and op.acked then
      choose(op, {unpack(op.ts, 2)}, 'first', 1)
    end
    if op.kind == 'pop' or op.kind == 'pop_n' or (op.kind == 'ack_pop' and op.acked) then pops[#pops + 1] = op end
  end
  if #picks > 0 then
    local members = {}
    for k, p in ipairs(picks) do members[k] = p.member end
    local jobs, bodies = read_popped(members)
    if not jobs then return nil, bodies end
    for k, p in ipairs(picks) do
      local job = jobs[k]
      local body = bodies[p.member] -- nil: the record holds it
      if p.op.take then job[F_TTR] = 0 end
      p.reply = reply(p.member, job, body, now, reserve_record(p.t, p.member, job, READY, now, gathers.add))
    end
    gathers.flush()
    spend(now)
    -- more: the topic still has ready jobs after this pop (its limits may
    -- hold them: the next consumer then learns when they open) (a later pick from
    -- it in this batch says so too). Only a pop that asks (op.a.more '1':
    -- its broker has consumers waiting, to hand the news on to) is told.
    local later = {}
    for k = #picks, 1, -1 do
      local p = picks[k]
      if later[p.t.name] then
        p.more = true
      else
        p.more = p.op.a.more == '1' and redis.call('ZCARD', p.t.ready) > 0
      end
      later[p.t.name] = true
    end
  end
  return pops
end

-- pop_replies renders each popping operation's reply (below the header:
-- OK and more, JOBS, EMPTY, PEEK; an ack_pop's ack first).
function pop_replies(pops)
  local first_pick = {} -- op -> index of its first pick
  for k, p in ipairs(picks) do
    if not first_pick[p.op] then first_pick[p.op] = k end
  end
  local function more_flag(p) if p.more then return 1 end return 0 end
  for _, op in ipairs(pops) do
    local r = op.reply -- a PEEK reply
    if not r then
      if op.got == 0 then
        r = {R.EMPTY, op.pause_wait, op.pause_topic, op.held_by}
      elseif op.kind == 'pop_n' then
        local at = first_pick[op]
        r = {R.JOBS, more_flag(picks[at + op.got - 1]), op.got}
        for k = at, at + op.got - 1 do
          for _, v in ipairs(picks[k].reply) do r[#r + 1] = v end
        end
      else
        local p = picks[first_pick[op]]
        r = p.reply
        table.insert(r, 1, more_flag(p))
        table.insert(r, 1, R.OK)
      end
    end
    if op.kind == 'ack_pop' then
      table.insert(r, 1, op.cid)
      table.insert(r, 1, R.OK)
    end
    op.reply = r
  end
end
end

-- main: take the short path when it may (lib_lean.lua); else start the
-- call's state, parse the operations, run the three phases, answer in order.
local function main()
  local short, err = lean.run() -- a call of plain operations only (lib_lean.lua)
  if err then return redis.error_reply(err) end
  if short then return short end
  paused, may_expire, now = renew(paused), renew(may_expire), now_ms()
  token_fields = renew(token_fields)
  held, bytes, discards, listed, plain_of = renew(held), renew(bytes), nil, renew(listed), renew(plain_of)
  picks, sweeps = renew(picks), renew(sweeps)
  local ops
  ops, err = parse()
  if not ops then return redis.error_reply(err) end
  reference_named(ops)
  push_phase(ops)
  delete_phase(ops)
  local pops
  pops, err = pop_phase(ops)
  if not pops then return redis.error_reply(err) end
  pop_replies(pops)
  local out = {}
  for k, op in ipairs(ops) do out[k] = op.reply end
  if #dropped_cids > 0 then
    table.insert(dropped_cids, 1, R.DROPPED)
    out[#out + 1] = dropped_cids
  end
  return out
end
return main()
