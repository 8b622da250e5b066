-- lib_lean.lua, after lib_limits.lua (see lib.lua): batch.lua's short path.
-- A call whose operations are all plain, on topics that use no feature,
-- runs here: straight through, with the data model's commands, the
-- counters and the wake-ups, and none of the general path's tables of
-- operations, phases and refusals, whose Lua a plain call does not need
-- (docs/performance-log.md, "The short path"). It runs the same
-- library functions on each job (settle, enter, reserve_record,
-- delete_job...), in the general path's order (pushes, deletes, pops), so
-- its answers and writes are the general path's for the same operations
-- (pool TestShortPathAgreesWithGeneral); a call with anything else goes
-- there, before anything is written.
--
-- Plain operations: a push of one topic (no fanout copies) with no unique
-- key, group, schedule, expiry or follow-ups; a delete; a pop of any number of topics,
-- first, take or best; a pop_n of one topic, first or best; an ack_pop (an
-- ack, then a first pop of its other topics). Plain topics:
-- not a fanout child (a '+' in the name: every call references those),
-- none of lean.push_settings and lean.limits, not grouped; for a push, no
-- fanout children; for a pop, not paused and never given a job that
-- expires (its pops sweep).
local lean = {}
do
  local AT_PUSH, AT_DELETE, AT_POP, AT_POP_N = OP_ARGS.push.at, OP_ARGS.delete.at, OP_ARGS.pop.at, OP_ARGS.pop_n.at
  local AT_ACK_POP = OP_ARGS.ack_pop.at
  local PUSH_ARGS, DELETE_ARGS, POP_ARGS, POP_N_ARGS = #OP_ARGS.push, #OP_ARGS.delete, #OP_ARGS.pop, #OP_ARGS.pop_n
  local ACK_POP_ARGS = #OP_ARGS.ack_pop
  local MORE_AT = {pop = AT_POP.more, pop_n = AT_POP_N.more, ack_pop = AT_ACK_POP.more} -- each popping kind's more
  -- lean.push_settings are the settings a push looks at (batch.lua admit,
  -- unique_refusal, group_of, expiry; fanout_only), lean.limits a pop's
  -- and an ack's (lib_limits.lua): a plain topic has none of either.
  lean.push_settings = {'max_item_size', 'max_items', 'max_size', 'max_age', 'group_from', 'unique_from', 'fanout_only'}
  lean.limits = {'rate', 'max_reserved', 'group_max_reserved'}

  -- lean.sets_any says whether settings cfg set any of names.
  function lean.sets_any(cfg, names)
    for _, name in ipairs(names) do
      if cfg[name] then return true end
    end
    return false
  end

  -- plain says whether topic t uses none of the features the short path
  -- leaves out (above).
  local function plain(t)
    if string.find(t.name, '+', 2, true) then return false end
    local cfg = topic_config(t)
    return not (lean.sets_any(cfg, lean.push_settings) or lean.sets_any(cfg, lean.limits) or groups.on(t))
  end

  -- open says whether a pop may take topic t's head the short way: not
  -- paused, and no job that expires ever entered it.
  local function open(t, now)
    local info = redis.call('HMGET', t.info, 'paused_until', 'expiring')
    return tonumber(info[1] or '0') <= now and not info[2]
  end

  -- store is batch.lua's store for a plain push (arguments at ARGV[at...]).
  local function store(t, member, at, now)
    local job = OP_ARGS.push.record(ARGV, at, AT_PUSH, t.name, now)
    push_job(t, member, job, ARGV[at + AT_PUSH.body], gathers.add)
    return job[F_DUE]
  end

  -- lean.run runs the call's operations (batch.lua's ARGV) when every one
  -- is plain and returns their replies; nil, having written nothing, when
  -- one is not; or nil and an error.
  function lean.run()
    local now -- Redis's clock, read unless every operation is a delete (an ack needs none)
    -- The operations: kind, the place of its first argument, of its first
    -- topic's number and how many topics it names (the job's topic first;
    -- an ack_pop's others, and a pop's, are popped in their order), each.
    local kinds, ats, tat, tk = {}, {}, {}, {}
    local i, n = ARGS.batch.topics + tonumber(ARGV[ARGS.batch.n]), 0
    while i <= #ARGV do
      local kind, k = ARGV[i], 1
      if ARGV[i + 1] ~= '1' then k = tonumber(ARGV[i + 1]) end -- most name one topic: no conversion
      local at = i + 2 + k
      n = n + 1
      kinds[n], ats[n], tat[n], tk[n] = kind, at, i + 2, k
      if kind == 'push' then
        if k ~= 1 or ARGV[at + AT_PUSH.unique_key] ~= '' or ARGV[at + AT_PUSH.group] ~= '' or
          ARGV[at + AT_PUSH.schedule_key] ~= '' or ARGV[at + AT_PUSH.expires] ~= '0' or
          ARGV[at + AT_PUSH.then_list] ~= '' or ARGV[at + AT_PUSH.dead_list] ~= '' or ARGV[at + AT_PUSH.after] ~= '' or
          ARGV[at + AT_PUSH.batch] ~= '' then return nil end
        i = at + PUSH_ARGS
      elseif kind == 'delete' then
        i = at + DELETE_ARGS
      elseif kind == 'pop' then
        local mode = ARGV[at + AT_POP.mode]
        if mode ~= 'first' and mode ~= 'take' and mode ~= 'best' then return nil end
        i = at + POP_ARGS
      elseif kind == 'pop_n' then
        local mode = ARGV[at + AT_POP_N.mode]
        if k ~= 1 or (mode ~= 'first' and mode ~= 'best') then return nil end
        i = at + POP_N_ARGS
      elseif kind == 'ack_pop' then
        if k < 2 then return nil end
        i = at + ACK_POP_ARGS
      else
        return nil
      end
      if kind ~= 'delete' and not now then now = now_ms() end
    end
    -- The topics, each looked at once: plain, and as each kind needs.
    -- firsts: operation -> its first topic's keys; others: operation -> its
    -- other topics' (by place, from 1), for one that names several.
    local ts, pushed, popped, firsts, others = {}, {}, {}, {}, {}
    for k = 1, n do
      local kind = kinds[k]
      for j = 0, tk[k] - 1 do
        local ti = tonumber(ARGV[tat[k] + j])
        local t = ts[ti]
        if not t then
          t = topic_keys(ti, ARGV[ARGS.batch.topics - 1 + ti])
          if not plain(t) then return nil end
          ts[ti] = t
        end
        if j == 0 then
          firsts[k] = t
        else
          others[k] = others[k] or {}
          others[k][j] = t
        end
        if kind == 'push' and not pushed[ti] then
          if #fanout_children(t.name) > 0 then return nil end
          pushed[ti] = true
        elseif (kind == 'pop' or kind == 'pop_n' or (kind == 'ack_pop' and j > 0)) and not popped[ti] then
          if not open(t, now) then return nil end
          popped[ti] = true
        end
      end
    end
    local replies = {}

    -- The pushes, in order (batch.lua push_phase).
    local members, at_of = {}, {}
    for k = 1, n do
      if kinds[k] == 'push' then
        members[#members + 1] = ARGV[ats[k] + AT_PUSH.member]
        at_of[#members] = k
      end
    end
    if #members > 0 then
      local taken, seen, counted = hmget(K_JOBS, members), {}, {}
      for m, member in ipairs(members) do
        local k = at_of[m]
        if taken[m] or seen[member] then
          replies[k] = REPLY.push.EXISTS()
        else
          seen[member] = true
          local t = firsts[k]
          replies[k] = REPLY.push.OK(now, store(t, member, ats[k], now), 1)
          counted[t.name] = t
        end
      end
      for _, t in pairs(counted) do count_pushes(t, now) end
      gathers.flush()
    end

    -- The deletes and ack_pops' acks, in order (batch.lua delete_phase).
    members, at_of = {}, {}
    for k = 1, n do
      if kinds[k] == 'delete' or kinds[k] == 'ack_pop' then
        members[#members + 1] = ARGV[ats[k]] -- the member, first of both
        at_of[#members] = k
      end
    end
    local acked, dropped_of = {}, nil -- ack_pop -> its job's client id, once acked; -> dropped, when some were
    if #members > 0 then
      local records, gone = hmget(K_JOBS, members), {}
      for m, member in ipairs(members) do
        local k = at_of[m]
        local at, delete = ats[k], kinds[k] == 'delete'
        local attempt, mode, result = ARGV[at + AT_ACK_POP.attempt], 'ack', ARGV[at + AT_ACK_POP.result]
        if delete then attempt, mode, result = ARGV[at + AT_DELETE.attempt], ARGV[at + AT_DELETE.mode], ARGV[at + AT_DELETE.result] end
        local record = records[m]
        if gone[member] then record = ack_record(gone, member, record) end
        local cid, refused, kept, dropped, keep = ack_job(firsts[k], member, record, tonumber(attempt), mode, result, gathers.add)
        if refused then
          replies[k] = refused
          if refused[1] == R.CANCELLED then gone[member] = 'kept' end -- cancelled now: read it anew
        else
          gone[member] = kept and 'kept' or 'deleted'
          if delete then
            replies[k] = REPLY.ack.OK(cid, dropped, keep)
          else
            acked[k] = cid
            if dropped ~= '' then
              dropped_of = dropped_of or {}
              dropped_of[k] = dropped
            end
          end
        end
      end
      gathers.flush()
    end

    -- The pops, in order (batch.lua pop_phase): each takes the head of the
    -- first of its topics that has one (an ack_pop's after the job's, once
    -- acked); a pop_n up to n of its topic's.
    members, at_of = {}, {}
    local from, first, got = {}, {}, {} -- each pick's topic; operation -> its first pick, how many it took
    for k = 1, n do
      local kind = kinds[k]
      if kind == 'pop' or kind == 'pop_n' or (kind == 'ack_pop' and acked[k]) then
        local want, j = 1, 0
        if kind == 'pop_n' then want = tonumber(ARGV[ats[k] + AT_POP_N.n]) end
        if kind == 'ack_pop' then j = 1 end
        first[k], got[k] = #members + 1, 0
        if kind == 'pop' and tk[k] > 1 and ARGV[ats[k] + AT_POP.mode] == 'best' then
          -- beanstalkd's order: the lowest (priority, member) among all the
          -- topics' heads (batch.lua choose)
          local best, best_pri, member
          for j = 0, tk[k] - 1 do
            local t = j == 0 and firsts[k] or others[k][j]
            local head = redis.call('ZRANGE', t.ready, 0, 0, 'WITHSCORES')
            if head[1] then
              local pri = tonumber(head[2])
              if goes_before(pri, head[1], best_pri, member) then best, best_pri, member = t, pri, head[1] end
            end
          end
          if best then
            redis.call('ZREM', best.ready, member)
            members[#members + 1] = member
            at_of[#members], from[#members] = k, best
            got[k] = 1
          end
          want = 0
        end
        while want > 0 and j < tk[k] and got[k] == 0 do
          local t = j == 0 and firsts[k] or others[k][j]
          local heads = redis.call('ZPOPMIN', t.ready, want)
          for h = 1, #heads, 2 do
            members[#members + 1] = heads[h]
            at_of[#members], from[#members] = k, t
          end
          got[k] = #heads / 2
          j = j + 1
        end
        if got[k] == 0 then replies[k] = REPLY.pop.EMPTY(-1, '', '') end
      end
    end
    if #members > 0 then
      local jobs, bodies = read_popped(members)
      if not jobs then return nil, bodies end
      local picked = {} -- each pick's job reply
      for m, member in ipairs(members) do
        local k, job = at_of[m], jobs[m]
        if kinds[k] == 'pop' and ARGV[ats[k] + AT_POP.mode] == 'take' then job[F_TTR] = 0 end
        picked[m] = {reply(member, job, bodies[member], now, reserve_record(from[m], member, job, READY, now, gathers.add))}
      end
      gathers.flush()
      -- more: the topic still has ready jobs after a pick (a later pick
      -- from it in this call says so too), told only to a pop that asks.
      local later, more = {}, {}
      for m = #members, 1, -1 do
        local k, t = at_of[m], from[m]
        more[m] = 0
        if later[t.name] or (ARGV[ats[k] + MORE_AT[kinds[k]]] == '1' and redis.call('ZCARD', t.ready) > 0) then more[m] = 1 end
        later[t.name] = true
      end
      for k = 1, n do
        local c = got[k]
        if c and c > 0 then
          local at = first[k]
          if kinds[k] == 'pop_n' then
            local r = REPLY.pop.JOBS(more[at + c - 1], c)
            for m = at, at + c - 1 do
              local p = picked[m]
              r[#r + 1], r[#r + 2], r[#r + 3], r[#r + 4] = p[1], p[2], p[3], p[4]
            end
            replies[k] = r
          else
            replies[k] = REPLY.pop.OK(more[at], unpack(picked[at]))
          end
        end
      end
    end
    -- An ack_pop answers its ack, then its pop (batch.lua pop_replies).
    for k, cid in pairs(acked) do replies[k] = REPLY.ack_pop.OK(cid, dropped_of and dropped_of[k] or '', unpack(replies[k])) end
    return replies
  end
end
