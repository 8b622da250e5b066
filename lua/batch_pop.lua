-- batch_pop.lua, after batch_push.lua: batch.lua's pop phase (phase 3).

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
      op.reply = REPLY.pop.PEEK(best.name, best_pri, member)
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
      p.reply = {reply(p.member, job, body, now, reserve_record(p.t, p.member, job, READY, now, gathers.add))}
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
        r = REPLY.pop.EMPTY(op.pause_wait, op.pause_topic, op.held_by)
      elseif op.kind == 'pop_n' then
        local at = first_pick[op]
        r = REPLY.pop.JOBS(more_flag(picks[at + op.got - 1]), op.got)
        for k = at, at + op.got - 1 do
          for _, v in ipairs(picks[k].reply) do r[#r + 1] = v end
        end
      else
        local p = picks[first_pick[op]]
        r = REPLY.pop.OK(more_flag(p), unpack(p.reply))
      end
    end
    if op.kind == 'ack_pop' then r = REPLY.ack_pop.OK(op.cid, op.dropped, unpack(r)) end
    op.reply = r
  end
end
end
