-- lib_groups.lua, after lib_topics.lua (see lib.lua): fair groups.
-- A job may carry a group (F_GROUP: a producer's "group", or for a push
-- without one the field of its JSON body that the topic's group_from
-- names). A topic that has had a grouped job is grouped: its info's
-- 'grouped' is 1, and the bucket's defaults carry GROUPED_MARK, so that
-- the topics of buckets with no grouped topic read nothing more. Every
-- ready job of a grouped topic is also in its group's queue (t.group_jobs,
-- entries group NUL priority NUL member, read BYLEX: priority, then id,
-- within a group; a job without a group is in the group ''), each group's
-- ready count is in t.group_ready, and each group with ready jobs is in
-- t.group_ring, scored by its turn: the topic's count of turns
-- (t.group_state's '@turn') when it was last served or came. A pop takes the best job of the
-- ring's first group and gives the group the next turn (batch.lua
-- choose), so groups are served round-robin whatever their sizes. A group
-- leaves the ring in the script that takes or removes its last ready job,
-- so a pop's cost does not grow with idle groups.
-- group_max_reserved (jobs of one group reserved at once) and group_rate
-- (its deliveries a second, a bucket of one token) hold a group back: it
-- stays in the ring, parked (scored from PARKED: until its next token; from
-- PARKED_CAP: until one of its jobs leaves the reserved set). A group's
-- reserved jobs are counted in t.group_state ('r:G', dropped at 0). A
-- group_rate's only state is the parked score: past it, the group's bucket
-- is full again. A group whose token is pending but that has no ready job
-- is idle: scored from IDLE (until its token), after every group with a
-- turn and before the parked ones, so that a pop never looks at it. The
-- idle are what a producer can multiply (each group it names is one), so
-- a topic keeps at most group_max_parked of them (0: no limit): past that, the one whose
-- token comes first is forgotten (it may take its next job that much
-- early), and each group that goes idle drops two whose token has come.
-- (groups.of and groups.picks are the per-call state: lib.lua's begin sets them.)

-- The library is one Lua chunk, whose main function may hold at most 200
-- locals: this file's own are in a block, and what the others call is a
-- field of lib.lua's groups (groups.on, groups.add...).
do
  local GROUPED_MARK = '@grouped'
  -- groups.MAX is the longest group name, bytes: job.MaxGroup.
  groups.MAX = 200

  -- groups.name_ok says s makes a group name by job.ValidateGroup's rule, the
  -- one a producer's group is held to on every front end: 1 to MAX bytes of
  -- UTF-8 (RFC 3629: no overlong forms, surrogates or code points past
  -- U+10FFFF, as Go's utf8.ValidString) without ASCII control characters.
  -- group_from reads it from a body, which beanstalkd and memcache producers
  -- send as any bytes.
  function groups.name_ok(s)
    local n = #s
    if n == 0 or n > groups.MAX or string.find(s, '%c') then return false end
    local i = 1
    while i <= n do
      local c = string.byte(s, i)
      local len, lo, hi = 1, 0x80, 0xBF -- lo, hi: the second byte's range
      if c < 0x80 then len = 1
      elseif c >= 0xC2 and c <= 0xDF then len = 2
      elseif c == 0xE0 then len, lo = 3, 0xA0
      elseif c == 0xED then len, hi = 3, 0x9F
      elseif c >= 0xE1 and c <= 0xEF then len = 3
      elseif c == 0xF0 then len, lo = 4, 0x90
      elseif c >= 0xF1 and c <= 0xF3 then len = 4
      elseif c == 0xF4 then len, hi = 4, 0x8F
      else return false end
      if i + len - 1 > n then return false end
      for k = 1, len - 1 do
        local b = string.byte(s, i + k)
        if k == 1 then
          if b < lo or b > hi then return false end
        elseif b < 0x80 or b > 0xBF then
          return false
        end
      end
      i = i + len
    end
    return true
  end
  local IDLE = 2e15
  local PARKED = 4e15
  local PARKED_CAP = 8e15
  -- GROUP_MAX_PARKED is group_max_parked when unset: ~11 MB of a topic's ring.
  local GROUP_MAX_PARKED = 100000
  -- GROUP_BACKFILL is the most ready jobs a topic may hold when its first
  -- grouped job comes: they are put in the group '' in that script.
  local GROUP_BACKFILL = 10000
  -- GROUP_LOOKS bounds the groups one pick parks before it gives up for this call.
  local GROUP_LOOKS = 64

  -- groups.on says whether topic t is grouped, read once per call.
  function groups.on(t)
    local on = groups.of[t.name]
    if on == nil then
      on = bucket_defaults()[GROUPED_MARK] ~= nil and redis.call('HGET', t.info, 'grouped') == '1'
      groups.of[t.name] = on
    end
    return on
  end

  -- groups.entry is the entry of a ready job (member, of group g and
  -- priority pri) in its group's queue; queue_entry, a record's.
  function groups.entry(g, pri, member)
    return g .. '\0' .. string.format('%010d', pri) .. '\0' .. member
  end
  local function queue_entry(job, member)
    return groups.entry(job[F_GROUP] or '', job[F_PRI], member)
  end

  -- groups.waits_token says whether a ring score parks its group until a
  -- token (group_rate), which keeps it in the ring with no ready job.
  function groups.waits_token(score)
    return score >= PARKED and score < PARKED_CAP
  end

  -- idle says whether a ring score is an idle group's (a token pending, no
  -- ready job).
  local function idle(score)
    return score >= IDLE and score < PARKED
  end

  groups.idle = idle

  -- groups.parts splits a queue entry into its group, priority and member.
  function groups.parts(entry)
    local g, pri, member = string.match(entry, '^(.-)%z(%d+)%z(.*)$')
    return g, tonumber(pri), member
  end

  -- next_turn is the score of a group of topic t served (or come) now:
  -- behind every group served before (the topic's count of turns).
  local function next_turn(t)
    return redis.call('HINCRBY', t.group_state, '@turn', 1)
  end

  -- groups.add puts a job that became ready in topic t in its group's queue,
  -- and a group that had no ready job in the ring, behind the others; an
  -- idle one is parked until its token (groups.head lets it back when the
  -- token has come already).
  function groups.add(t, member, job)
    if not groups.on(t) then return end
    local g = job[F_GROUP] or ''
    redis.call('ZADD', t.group_jobs, 0, queue_entry(job, member))
    if tonumber(redis.call('ZINCRBY', t.group_ready, 1, g)) == 1 then
      local score = redis.call('ZSCORE', t.group_ring, g)
      score = score and tonumber(score)
      if not score then
        redis.call('ZADD', t.group_ring, next_turn(t), g)
      elseif idle(score) then
        redis.call('ZADD', t.group_ring, score - IDLE + PARKED, g)
      end
    end
  end

  -- park_idle keeps group g of topic t, which has no ready job left, in the
  -- ring until its token (ms; its group_rate's) comes: idle. Two idle
  -- groups whose token has come (by now, ms, when the caller knows it) go,
  -- and the topic's idle groups past group_max_parked go, first token first.
  local function park_idle(t, g, token, now)
    redis.call('ZADD', t.group_ring, IDLE + token, g)
    if now then
      local done = redis.call('ZRANGEBYSCORE', t.group_ring, IDLE, IDLE + now, 'LIMIT', 0, 2)
      if done[1] then redis.call('ZREM', t.group_ring, unpack(done)) end
    end
    local most = tonumber(topic_config(t).group_max_parked or GROUP_MAX_PARKED)
    if most <= 0 then return end -- 0: no limit
    local over = redis.call('ZCOUNT', t.group_ring, IDLE, '(' .. PARKED) - most
    if over > 0 then
      -- Never g itself: a job that left the ready set to come back at
      -- once (a change of its priority or delay) would free its group.
      local first = redis.call('ZRANGEBYSCORE', t.group_ring, IDLE, '(' .. PARKED, 'LIMIT', 0, math.min(over, GROUP_LOOKS) + 1)
      local gone = {}
      for _, name in ipairs(first) do
        if name ~= g and #gone < over then gone[#gone + 1] = name end
      end
      if gone[1] then
        redis.call('ZREM', t.group_ring, unpack(gone))
        count_topic(t, 'groups_forgotten', #gone) -- the bound is hit: stats say so
      end
    end
  end

  -- group_left notes that group g of topic t lost a ready job (its entry is
  -- out of the queue already); with none left, the group leaves the ring,
  -- unless its group_rate parked it: it stays, idle, until its next token,
  -- or it could take another job at once.
  local function group_left(t, g)
    if tonumber(redis.call('ZINCRBY', t.group_ready, -1, g)) <= 0 then
      redis.call('ZREM', t.group_ready, g)
      local score = tonumber(redis.call('ZSCORE', t.group_ring, g) or '0')
      if groups.waits_token(score) then
        park_idle(t, g, score - PARKED)
      else
        redis.call('ZREM', t.group_ring, g)
      end
    end
  end

  -- groups.remove takes a job that left topic t's ready set other than by a pop
  -- (a delete, an expiry, a change of its delay or priority) out of its
  -- group's queue.
  function groups.remove(t, member, job)
    if not groups.on(t) then return end
    if redis.call('ZREM', t.group_jobs, queue_entry(job, member)) == 1 then group_left(t, job[F_GROUP] or '') end
  end

  -- groups.make makes topic t grouped, at its first grouped job: its ready
  -- jobs (none has a group: none could) go in the group ''. It returns
  -- {'GROUP_BACKLOG', ready jobs, GROUP_BACKFILL} when t holds too many for
  -- one script, or nil.
  function groups.make(t)
    if groups.on(t) then return nil end
    local n = redis.call('ZCARD', t.ready)
    if n > GROUP_BACKFILL then return REPLY.push.GROUP_BACKLOG(n, GROUP_BACKFILL) end
    redis.call('HSET', t.info, 'grouped', '1')
    redis.call('HSET', K_DEFAULTS, GROUPED_MARK, '1')
    bucket_defaults()[GROUPED_MARK] = '1'
    groups.of[t.name] = true
    -- Its reserved jobs (none has a group) are the group ''s.
    local reserved = redis.call('ZCARD', t.reserved)
    if reserved > 0 then redis.call('HSET', t.group_state, 'r:', reserved) end
    if n > 0 then
      local ready = redis.call('ZRANGE', t.ready, 0, -1, 'WITHSCORES')
      local args = {'ZADD', t.group_jobs}
      for k = 1, #ready, 2 do
        args[#args + 1] = 0
        args[#args + 1] = groups.entry('', tonumber(ready[k + 1]), ready[k])
        if #args >= 2000 then
          redis.call(unpack(args))
          args = {'ZADD', t.group_jobs}
        end
      end
      if #args > 2 then redis.call(unpack(args)) end
      redis.call('ZADD', t.group_ready, n, '')
      redis.call('ZADD', t.group_ring, next_turn(t), '')
    end
    return nil
  end

  -- group_limits are topic t's group_max_reserved and group_rate (0: none).
  local function group_limits(t)
    local cfg = topic_config(t)
    return tonumber(cfg.group_max_reserved or '0'), tonumber(cfg.group_rate or '0')
  end

  -- group_hold says whether group g of topic t is at its
  -- group_max_reserved (PARKED_CAP: where it is parked then), or nil. take:
  -- the pop removes its job, which is never reserved.
  local function group_hold(t, g, take)
    local cap = group_limits(t)
    if cap <= 0 or take then return nil end
    local reserved = tonumber(redis.call('HGET', t.group_state, 'r:' .. g) or '0')
    if reserved + (groups.picks[t.name .. '\0' .. g] or 0) >= cap then return PARKED_CAP end
    return nil
  end

  -- groups.head finds the job a pop of grouped topic t takes next: the best
  -- job of the first group in the ring that its limits let go (groups they
  -- hold are parked on the way, and those whose token came are let back
  -- first). It returns the job's queue entry, or nil and the ms until a
  -- parked group's token comes (-1: none comes by time; a slot must free).
  function groups.head(t, now, take)
    -- Groups whose token came take their turn again (those with no job left go).
    local due = redis.call('ZRANGEBYSCORE', t.group_ring, PARKED, PARKED + now, 'LIMIT', 0, GROUP_LOOKS)
    for _, g in ipairs(due) do
      if redis.call('ZSCORE', t.group_ready, g) then
        redis.call('ZADD', t.group_ring, next_turn(t), g)
      else
        redis.call('ZREM', t.group_ring, g)
      end
    end
    for _ = 1, GROUP_LOOKS do
      local first = redis.call('ZRANGE', t.group_ring, 0, 0, 'WITHSCORES')
      if first[1] and idle(tonumber(first[2])) then -- no group has a turn: the first parked one's token
        first = redis.call('ZRANGEBYSCORE', t.group_ring, PARKED, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
      end
      if not first[1] then return nil, -1 end
      local score = tonumber(first[2])
      if score >= PARKED_CAP and not take then return nil, -1 end
      if groups.waits_token(score) then return nil, math.max(score - PARKED - now, 1) end
      local g = first[1]
      local parked = nil -- a take's job is never reserved: group_max_reserved does not hold it
      if score < PARKED_CAP then parked = group_hold(t, g, take) end
      if not parked then
        local head = redis.call('ZRANGE', t.group_jobs, '[' .. g .. '\0', '(' .. g .. '\1', 'BYLEX', 'LIMIT', 0, 1)
        if head[1] then return head[1] end
        redis.call('ZREM', t.group_ring, g) -- no queue: not a group with ready jobs (cannot happen)
        redis.call('ZREM', t.group_ready, g)
      else
        redis.call('ZADD', t.group_ring, parked, g)
      end
    end
    return nil, 1 -- many groups held back at once: look again soon
  end

  -- groups.take takes the job of entry (groups.head's) out of its group's
  -- queue and its topic's ready set for a pop. The group is then parked
  -- until its next token with a group_rate (a bucket of one token: one job
  -- each 1/rate s), or at its group_max_reserved; or it has the next turn;
  -- with no job left, it leaves the ring. It returns the job's member.
  function groups.take(t, entry, now, take)
    local g, _, member = groups.parts(entry)
    redis.call('ZREM', t.group_jobs, entry)
    redis.call('ZREM', t.ready, member)
    local cap, rate = group_limits(t)
    if cap > 0 and not take then
      local k = t.name .. '\0' .. g
      groups.picks[k] = (groups.picks[k] or 0) + 1
    end
    local left = tonumber(redis.call('ZINCRBY', t.group_ready, -1, g))
    if left <= 0 then redis.call('ZREM', t.group_ready, g) end
    if rate > 0 and left > 0 then
      redis.call('ZADD', t.group_ring, PARKED + now + math.ceil(1000 / rate), g)
    elseif rate > 0 then
      park_idle(t, g, now + math.ceil(1000 / rate), now)
    elseif left <= 0 then
      redis.call('ZREM', t.group_ring, g)
    else
      redis.call('ZADD', t.group_ring, group_hold(t, g, take) or next_turn(t), g)
    end
    return member
  end

  -- groups.untake is told that a job a pop took from group g of topic t
  -- was removed as it was popped (its TTR was 0): it was never reserved,
  -- so it does not count against group_max_reserved, and a group parked
  -- for it goes back in the ring.
  function groups.untake(t, g)
    local k = t.name .. '\0' .. g
    if (groups.picks[k] or 0) > 0 then groups.picks[k] = groups.picks[k] - 1 end
    local score = redis.call('ZSCORE', t.group_ring, g)
    if score and tonumber(score) >= PARKED_CAP then redis.call('ZADD', t.group_ring, next_turn(t), g) end
  end

  -- groups.unpark lets parked groups of topic t back into the ring (its
  -- group settings changed: they hold otherwise now); an idle one (no
  -- ready job) leaves it. It looks at up to n idle or parked groups (a
  -- bounded step: the pool calls again while a step finds n, so 500,000
  -- parked groups do not hold Redis in one call) and returns how many came
  -- back and how many it looked at; each leaves the parked range either way.
  function groups.unpark(t, n)
    local parked = redis.call('ZRANGEBYSCORE', t.group_ring, IDLE, '+inf', 'LIMIT', 0, n)
    local back = 0
    for _, g in ipairs(parked) do
      if redis.call('ZSCORE', t.group_ready, g) then
        redis.call('ZADD', t.group_ring, next_turn(t), g)
        back = back + 1
      else
        redis.call('ZREM', t.group_ring, g)
      end
    end
    return {back, #parked}
  end

  -- groups.reserved counts n of topic t's jobs of group g that entered (n >
  -- 0) or left (n < 0) the reserved set; a group parked by its
  -- group_max_reserved is let back into the ring when one leaves.
  function groups.reserved(t, g, n)
    if not groups.on(t) then return end
    local left = tonumber(redis.call('HINCRBY', t.group_state, 'r:' .. g, n))
    if left <= 0 then redis.call('HDEL', t.group_state, 'r:' .. g) end
    if n < 0 then
      local score = redis.call('ZSCORE', t.group_ring, g)
      if score and tonumber(score) >= PARKED_CAP then redis.call('ZADD', t.group_ring, next_turn(t), g) end
    end
  end
end
