-- batch_push.lua, after batch.lua: batch.lua's push phase (phase 1).

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
    announce_end(member, job, 'discarded')
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
  if max_item > 0 and #body > max_item then return REPLY.push.TOO_BIG(max_item) end
  local max_items, max_bytes = tonumber(cfg.max_items or '0'), tonumber(cfg.max_size or '0')
  if max_bytes > 0 and #body > max_bytes then return REPLY.push.FULL('max_size', max_bytes) end -- no room could ever be made
  local function full()
    if max_items > 0 and holds(t) >= max_items then return REPLY.push.FULL('max_items', max_items) end
    if max_bytes > 0 and size(t) + #body > max_bytes then return REPLY.push.FULL('max_size', max_bytes) end
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

-- store writes a new job of push op (its writes gathered) and counts it:
-- the record its arguments make (OP_ARGS.push.record), with what the
-- general path decides, its client id (none for a fanout child's copy),
-- expiry and group.
-- listed: topic name -> its keys: topics that got a job (declared above the block)
local function store(t, member, op, cid, expires, group)
  local a = op.a
  local job = OP_ARGS.push.record(ARGV, op.at, OP_ARGS.push.at, t.name, now)
  job[F_GROUP], job[F_CID], job[F_EXPIRES] = group, cid, expires
  if a.then_list ~= '' then job[F_THEN] = a.then_list end
  if a.dead_list ~= '' then job[F_ON_DEAD] = a.dead_list end
  if a.after ~= '' then deps.hold(job, a.after) end
  if a.batch ~= '' then job[F_BATCH] = a.batch end
  push_job(t, member, job, a.body, gathers.add)
  listed[t.name] = t
  if held[t.name] then held[t.name] = held[t.name] + 1 end
  if bytes[t.name] then bytes[t.name] = bytes[t.name] + #a.body end
  return job
end

-- rules holds a push's refusals, its group and whether its topic is plain,
-- in a table: the library's main function holds at most 200 locals.
local rules = {}

-- rules.fanout says, for a push to topic t whose op declared the children
-- in op.ts[2..], {'CHILDREN', the real ones...} if those are not t's
-- children now (the pool asks again with them), or nil.
function rules.fanout(op, t)
  local want = fanout_children(t.name)
  local declared = {}
  for j = 2, #op.ts do declared[op.ts[j].name] = true end
  local same = #want == #op.ts - 1
  for _, name in ipairs(want) do
    if not declared[name] then same = false end
  end
  if same then
    -- Its dependencies were told of this job alone (deps.lua register),
    -- its batch listed it alone (batches.lua).
    if (op.a.after ~= '' or op.a.batch ~= '') and #want > 0 then return REPLY.push.AFTER_FANOUT() end
    return nil
  end
  local r = REPLY.push.CHILDREN()
  for _, name in ipairs(want) do r[#r + 1] = name end
  return r
end

-- rules.unique says, for a push to topic t, {'UNIQUE_FROM', 'body' or
-- 'none'} when its key does not follow t's unique_from now (the pool,
-- whose memory of the setting was stale, asks again), or {'UNIQUE_FANOUT'}
-- for a unique push to a topic with fanout children (a key names one job;
-- a key from unique_from is then not used: op.keyless), or nil.
function rules.unique(op, t)
  local a = op.a
  local by_body = topic_config(t).unique_from == 'body'
  if a.unique_mode == 'topic' and not by_body then return REPLY.push.UNIQUE_FROM('none') end
  if by_body and a.unique_key == '' then return REPLY.push.UNIQUE_FROM('body') end
  if a.unique_key ~= '' and #op.ts > 1 then
    -- A key names one job and this push makes several: a push's own key is
    -- refused; the topic's unique_from does not apply (op.keyless).
    if a.unique_mode ~= 'topic' then return REPLY.push.UNIQUE_FANOUT() end
    op.keyless = true
  end
end

-- rules.by_key settles a unique push (op.a.unique_key: its key's place in KEYS)
-- with the job that holds its key, if one does. It returns the reply when
-- that settles it: {'UNIQUE', holder, its client id} (mode reject),
-- {'REPLACED' or 'DEBOUNCED', holder, now, due ms (0: ready), its client
-- id} (a waiting job changed, the key held for its window again), or the
-- topic's refusal of a replacing body. nil: the push stores a fresh job,
-- which takes the key (op.ukey, for op.ufor ms). pushed: the members this
-- call stored (their records are among the gathered writes).
function rules.by_key(op, t, pushed)
  local a = op.a
  local key, mode, window = op_key(a.unique_key), a.unique_mode, tonumber(a.unique_for)
  if mode == 'topic' then -- the body's hash, as t's unique_from says: t's window and mode
    -- DEFAULT_UNIQUE_FOR is unique_for unset, seconds: job.DefaultUniqueFor
    -- (TestDefaultUniqueFor).
    local DEFAULT_UNIQUE_FOR = '3600'
    local cfg = topic_config(t)
    mode, window = cfg.unique_mode or 'reject', tonumber(cfg.unique_for or DEFAULT_UNIQUE_FOR) * 1000
  end
  local taken = redis.call('GET', key) -- the holder's member and client id (so a 409 names it when it is gone)
  if taken then
    local holder, cid = string.match(taken, '^(%S+) ?(.*)$')
    if pushed[holder] then gathers.flush() end
    local job = load(holder)
    -- A job of a batch, or one that waits for others, is never a change
    -- of another job (its topic's replace or debounce): it would not join
    -- its batch, nor wait. Refused as in mode reject.
    if mode == 'reject' or a.batch ~= '' or a.after ~= '' then return REPLY.push.UNIQUE(holder, cid) end
    local waiting = job and job[F_TOPIC] == t.name and (job[F_STATE] == READY or job[F_STATE] == DELAYED)
    if waiting and (job[F_EXPIRES] or 0) > 0 and job[F_EXPIRES] <= now then
      local before = size(t) -- read before the expiry, whose byte count is a deferred write
      expire_job(t, holder, job, now) -- its time ran out before a sweep found it: gone
      bytes[t.name] = before - (job[F_SIZE] or 0)
      if held[t.name] then held[t.name] = held[t.name] - 1 end
      waiting = false
    end
    if waiting then -- a reserved or finished job is never changed: a fresh one takes the key
      local pri, body, changed, expires = nil, nil, REPLY.push.DEBOUNCED, job[F_EXPIRES]
      if mode == 'replace' then
        -- The push's job in the waiting one's place: its body, delay,
        -- priority, TTR, expiry and retry policy, its failures forgotten.
        pri, body, changed = tonumber(a.priority), a.body, REPLY.push.REPLACED
        unindex_expiry(t, holder, job)
        job[F_TTR], job[F_EXPIRES], job[F_RETRY] = tonumber(a.ttr), expiry(t, tonumber(a.expires)), a.retry
        job[F_FAILURES], job[F_LAST_ERROR], job[F_ERRORS] = 0, '', nil
      end
      note(t, holder, job, mode == 'replace' and 'replaced' or 'debounced') -- saved with the change
      local refused, grown = change_waiting(t, holder, job, tonumber(a.delay), pri, body, a.json == '1' and 1 or 0, now, size)
      if refused then -- nothing saved: its expiry indexed again
        job[F_EXPIRES] = expires
        index_expiry(t, holder, job)
        return refused
      end
      if bytes[t.name] then bytes[t.name] = bytes[t.name] + grown end
      redis.call('PEXPIRE', key, window)
      return changed(holder, now, job[F_DUE], cid)
    end
  end
  op.ukey, op.ufor = key, window
end

-- rules.make_grouped is groups.make after this call's gathered writes: the
-- topic's ready jobs that join the group '' include this call's pushes.
function rules.make_grouped(t)
  if groups.on(t) then return nil end
  gathers.flush()
  return groups.make(t)
end

-- rules.group_of is the group of a push to topic t: the producer's, or, with
-- none and the topic's group_from naming a field, that field of the body
-- when the body is a JSON object and the field a string or number that
-- makes a group name ('' otherwise: no group).
function rules.group_of(t, a)
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

-- rules.fire makes a push that is a schedule's fire (op.a.schedule_key:
-- the place of the schedule's hash in KEYS) happen once: {'FIRED'} when
-- the schedule's next fire is no longer the one its broker read (another
-- fired it, or it was changed); else the schedule moves to its next fire
-- (its due entry with it) and its lateness is counted, and with overlap
-- skip, {'SKIPPED', member} while its last job waits or is reserved. A
-- fire that goes on is noted in op.fired (its job is noted once stored).
function rules.fire(op, t)
  local a = op.a
  if a.schedule_key == '' then return nil end
  local key = op_key(a.schedule_key)
  if redis.call('HGET', key, 'next') ~= a.schedule_due then return REPLY.push.FIRED() end
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
      return REPLY.push.SKIPPED(last)
    end
  end
  op.fired = key
end


-- rules.plain_topic says, once a call, whether topic t uses no setting a push
-- looks at and has no fanout children: then a push that brings no unique
-- key, no group and no schedule needs none of the refusals and limits
-- above, and only stores its job.
function rules.plain_topic(t)
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
      local short = #op.ts == 1 and a.unique_key == '' and a.schedule_key == '' and a.group == '' and rules.plain_topic(t)
      if taken[k] or seen[member] then
        op.reply = REPLY.push.EXISTS()
      elseif short then
        seen[member] = true
        local due = store(t, member, op, a.client_id, tonumber(a.expires), '')[F_DUE]
        op.reply = REPLY.push.OK(now, due, 1)
      else
        -- The refusals that ask the pool to push again come before a
        -- schedule's fire, which happens once (a push asked again would
        -- find it fired).
        op.reply = rules.fanout(op, t) or rules.unique(op, t) or rules.fire(op, t)
        if not op.reply and a.unique_key ~= '' and not op.keyless then op.reply = rules.by_key(op, t, seen) end
        if not op.reply and keep then
          op.group = rules.group_of(t, a)
          if op.group ~= '' then op.reply = rules.make_grouped(t) end
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
        if keep then due = store(t, member, op, a.client_id, expiry(t, tonumber(a.expires)), op.group)[F_DUE] end
        if keep and op.ukey then redis.call('SET', op.ukey, member .. ' ' .. a.client_id, 'PX', op.ufor) end
        if op.fired then
          redis.call('HSET', op.fired, 'last', now, 'last_id', member)
          redis.call('HINCRBY', op.fired, 'fires', 1)
        end
        for j = 2, #op.ts do
          local child = op.ts[j]
          local group = rules.group_of(child, a)
          if (group == '' or not rules.make_grouped(child)) and not admit(child, a.body) then
            local copy = store(child, op.children[j - 1], op, '', expiry(child, tonumber(a.expires)), group)
            if not keep then due = copy[F_DUE] end
          end
        end
        op.reply = REPLY.push.OK(now, due, keep and 1 or 0)
        for _, d in ipairs(discards) do op.reply[#op.reply + 1] = d end
      end
    end
    for _, t in pairs(listed) do count_pushes(t, now) end -- registration once (lib_topics.lua)
    gathers.flush()
  end
end
end
