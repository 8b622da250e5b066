-- check.lua verifies one topic against the job records: every member of the
-- topic's state sets has a record and a body, its record names this topic and
-- the state of the set it is in (so no job is in two sets), and the topic's
-- byte count is the sum of its jobs' body sizes, and every ready or delayed
-- job that expires is in the topic's expires set. For a grouped topic
-- (lib_groups.lua): its ready jobs are its group queues' entries, each
-- group's ready count is right, every group with ready jobs is in the ring
-- and no other is there but one parked by its group_rate, and each group's
-- reserved count is its reserved jobs'. Every job's outcomes (result,
-- progress, log, history) and its failures' errors are within the bounds
-- no setting can raise.
-- KEYS: the shared layout (contract.lua) with one topic.
-- ARGV: origin, topic.
-- Returns {members per state (delayed, ready, reserved, buried, dead, completed, cancelled: STATE_SET's), problem...}.
-- outcome_problems says where job's outcomes pass the bounds no setting
-- can raise (job.MaxResultLimit, job.MaxKept, job.ErrorsKept, a line,
-- detail or error of 1 KiB).
local function outcome_problems(job)
  local problems = {}
  if job[F_RESULT] and #job[F_RESULT] > 1048576 then problems[#problems + 1] = 'has a result over 1 MiB' end
  if job[F_PROGRESS] and #job[F_PROGRESS] > 1048576 then problems[#problems + 1] = 'has a progress over 1 MiB' end
  -- each list: its field, its name, where an entry's text is, the most entries kept (and as said)
  for _, f in ipairs({{F_LOG, 'log', 2, 1000, '1,000'}, {F_HISTORY, 'history', 4, 1000, '1,000'}, {F_ERRORS, 'failure', 3, 10, '10'}}) do
    if job[f[1]] then
      local list = cjson.decode(job[f[1]])
      if #list > f[4] then problems[#problems + 1] = 'keeps ' .. #list .. ' ' .. f[2] .. ' entries, over ' .. f[5] end
      for _, e in ipairs(list) do
        if #tostring(e[f[3]]) > 1024 then problems[#problems + 1] = 'has a ' .. f[2] .. ' entry over 1 KiB' break end
      end
    end
  end
  return problems
end

local t = topic_keys(1, ARGV[A.topic])
local count, out = {}, {} -- each state's members (STATE_SET's order); out: the problems
for state in ipairs(STATE_SET) do count[state] = 0 end
local bytes = 0
for state, set in ipairs(STATE_SET) do
  for _, m in ipairs(redis.call('ZRANGE', t[set], 0, -1)) do
    count[state] = count[state] + 1
    local job = load(m)
    if not job then
      table.insert(out, m .. ' is in ' .. set .. ' but has no record')
    elseif job[F_STATE] ~= state then
      table.insert(out, m .. ' is in ' .. set .. ' but its record says ' .. tostring(STATE_SET[job[F_STATE]]))
    elseif job[F_TOPIC] ~= t.name then
      table.insert(out, m .. ' is in ' .. t.name .. ' but its record says ' .. job[F_TOPIC])
    elseif job[F_BODY] == nil and redis.call('HEXISTS', K_BODIES, m) == 0 then
      table.insert(out, m .. ' has no body')
    elseif job[F_BODY] ~= nil and redis.call('HEXISTS', K_BODIES, m) == 1 then
      table.insert(out, m .. ' has a body in its record and another in the bodies hash')
    elseif (state == READY or state == DELAYED) and (job[F_EXPIRES] or 0) > 0 and not redis.call('ZSCORE', t.expires, m) then
      table.insert(out, m .. ' expires but is not in ' .. t.name .. "'s expires set")
    elseif state == WAITING and (not job[F_AFTER] or #cjson.decode(job[F_AFTER]).p == 0) then
      table.insert(out, m .. ' waits but for nothing') -- lib_deps.lua
    end
    if job and state ~= COMPLETED and state ~= CANCELLED then bytes = bytes + (job[F_SIZE] or 0) end -- an ended job's no longer counts
    if job then
      for _, p in ipairs(outcome_problems(job)) do table.insert(out, m .. ' ' .. p) end
    end
  end
end
if groups.on(t) then
  local ready, reserved = {}, {} -- group -> count
  for _, m in ipairs(redis.call('ZRANGE', t.ready, 0, -1)) do
    local job = load(m)
    if job then
      local g = job[F_GROUP] or ''
      ready[g] = (ready[g] or 0) + 1
      local entry = groups.entry(g, job[F_PRI], m)
      if not redis.call('ZSCORE', t.group_jobs, entry) then table.insert(out, m .. ' is ready but not in its group ' .. g .. "'s queue") end
    end
  end
  for _, m in ipairs(redis.call('ZRANGE', t.reserved, 0, -1)) do
    local job = load(m)
    if job then reserved[job[F_GROUP] or ''] = (reserved[job[F_GROUP] or ''] or 0) + 1 end
  end
  local queued = redis.call('ZCARD', t.group_jobs)
  if queued ~= count[READY] then table.insert(out, 'its group queues hold ' .. queued .. ' jobs, ' .. count[READY] .. ' are ready') end
  local counts = redis.call('ZRANGE', t.group_ready, 0, -1, 'WITHSCORES')
  local seen = {}
  for k = 1, #counts, 2 do
    local g, n = counts[k], tonumber(counts[k + 1])
    seen[g] = true
    if ready[g] ~= n then table.insert(out, 'group ' .. g .. ' counts ' .. n .. ' ready, it has ' .. tostring(ready[g] or 0)) end
    if not redis.call('ZSCORE', t.group_ring, g) then table.insert(out, 'group ' .. g .. ' has ready jobs but is not in the ring') end
  end
  for g, n in pairs(ready) do
    if not seen[g] then table.insert(out, 'group ' .. g .. ' has ' .. n .. ' ready jobs but no count') end
  end
  local ring = redis.call('ZRANGE', t.group_ring, 0, -1, 'WITHSCORES')
  for k = 1, #ring, 2 do
    local score = tonumber(ring[k + 1])
    if not seen[ring[k]] and not groups.waits_token(score) and not groups.idle(score) then
      table.insert(out, 'group ' .. ring[k] .. ' is in the ring with no ready job')
    elseif seen[ring[k]] and groups.idle(score) then
      table.insert(out, 'group ' .. ring[k] .. ' has ready jobs but is idle')
    end
  end
  local state = redis.call('HGETALL', t.group_state)
  local counted = {}
  for k = 1, #state, 2 do
    if string.sub(state[k], 1, 2) == 'r:' then counted[string.sub(state[k], 3)] = tonumber(state[k + 1]) end
  end
  for g, n in pairs(reserved) do
    if counted[g] ~= n then table.insert(out, 'group ' .. g .. ' counts ' .. tostring(counted[g] or 0) .. ' reserved, it has ' .. n) end
  end
  for g, n in pairs(counted) do
    if not reserved[g] then table.insert(out, 'group ' .. g .. ' counts ' .. n .. ' reserved, it has none') end
  end
end
local counted = tonumber(redis.call('HGET', t.info, 'bytes') or '0')
if counted ~= bytes then
  table.insert(out, t.name .. ' counts ' .. counted .. ' bytes, its jobs hold ' .. bytes)
end
local r = REPLY.check(count[DELAYED], count[READY], count[RESERVED], count[BURIED], count[DEAD], count[COMPLETED],
  count[CANCELLED], count[WAITING])
for _, problem in ipairs(out) do r[#r + 1] = problem end
return r
