-- lib_topics.lua, after lib.lua (see there): fanout children and the bucket's list of topics.

-- Fanout. A topic named parent+child is a child of parent (the name up to
-- its first '+'): it is listed under its parent in the bucket's fanout hash
-- once referenced (pushed, popped, peeked, configured), and gets a copy of
-- every job pushed to the parent from then on, until it is deleted.
-- (children_of, the children read in this call, is lib.lua's.)

-- parent_of is a child's parent's name, or nil for a topic that is no child.
local function parent_of(name)
  local plus = string.find(name, '+', 2, true)
  if plus then return string.sub(name, 1, plus - 1) end
end

-- children lists a parent's children. A push asks through fanout_children,
-- which skips the lookup in a bucket where no topic ever had a child.
local function children(parent)
  local c = children_of[parent]
  if not c then
    c = {}
    local v = redis.call('HGET', K_FANOUT, parent)
    if v then
      for name in string.gmatch(v, '%S+') do c[#c + 1] = name end
    end
    children_of[parent] = c
  end
  return c
end

local function fanout_children(parent)
  if not bucket_defaults()[FANOUT_MARK] then return {} end
  return children(parent)
end

-- set_children writes a parent's children.
local function set_children(parent, c)
  table.sort(c)
  children_of[parent] = c
  if #c == 0 then
    redis.call('HDEL', K_FANOUT, parent)
  else
    redis.call('HSET', K_FANOUT, parent, table.concat(c, ' '))
    if not bucket_defaults()[FANOUT_MARK] then
      redis.call('HSET', K_DEFAULTS, FANOUT_MARK, '1')
      default_settings[FANOUT_MARK] = '1'
    end
  end
end

-- add_topic lists topic t in its bucket (the set and its index) and says
-- whether it was not listed yet. A topic already listed costs one SADD, so
-- a push pays nothing more for the index.
local function add_topic(t)
  if redis.call('SADD', K_TOPICS, t.name) == 0 then return false end
  redis.call('ZADD', K_TOPIC_INDEX, 0, t.name)
  return true
end

-- drop_topic takes topic t off its bucket's list and its index.
local function drop_topic(t)
  redis.call('SREM', K_TOPICS, t.name)
  redis.call('ZREM', K_TOPIC_INDEX, t.name)
end

-- created notes when topic t came to be (its first job, or its first
-- reference as a fanout child), counts it, and schedules the check of its
-- max_queue_age (tick.lua).
local function created(t, now)
  if redis.call('HSETNX', t.info, 'created', now) == 0 then return end
  add(K_STATS, 'queue_creates', 1)
  local age = tonumber(topic_config(t).max_queue_age or '0')
  if age > 0 then
    schedule(t, now + age * 1000)
  end
end

-- count_pushes writes topic t's count of this call's pushes (held back
-- from flush) and lists the topic when the count starts with them:
-- registration once. forget removes the count and the listing together,
-- so a count already there means a listed topic, and a push pays no SADD.
local function count_pushes(t, now)
  local n = deltas[t.info].total_jobs
  deltas[t.info].total_jobs = nil
  if redis.call('HINCRBY', t.info, 'total_jobs', n) == n and add_topic(t) then created(t, now) end
end

-- reference lists topic t under its parent if it is a child and is not yet,
-- within the parent's limits; by_read says a read (pop, peek) names it.
local function reference(t, now, by_read)
  local parent = parent_of(t.name)
  if not parent then return end
  local c = children(parent)
  for _, name in ipairs(c) do
    if name == t.name then return end
  end
  -- The parent's limits (a child inherits its settings): at most max_fanout
  -- children (0: no limit), so a push's copies stay bounded; none made by a
  -- read (a pop, a peek) when fanout_on_read is false. A child refused here
  -- is an ordinary topic that gets no copies; the pool says why before.
  local cfg = topic_config(t)
  if by_read and cfg.fanout_on_read == 'false' then return end
  -- DEFAULT_MAX_FANOUT is max_fanout unset: pool/fanout.go's
  -- defaultMaxFanout (a local here: the library's main function holds at
  -- most 200 locals).
  local DEFAULT_MAX_FANOUT = '64'
  local most = tonumber(cfg.max_fanout or DEFAULT_MAX_FANOUT)
  if most > 0 and #c >= most then return end
  local grown = {unpack(c)}
  grown[#grown + 1] = t.name
  set_children(parent, grown)
  created(t, now)
end

-- unreference takes a deleted child off its parent's list.
local function unreference(t)
  local parent = parent_of(t.name)
  if not parent then return end
  local kept = {}
  for _, name in ipairs(children(parent)) do
    if name ~= t.name then kept[#kept + 1] = name end
  end
  set_children(parent, kept)
end

-- forget drops topic t, which holds no job, from its bucket: its listing,
-- its info (pause, totals, birth), its expiry index and its place in the
-- bucket's schedule. Its settings stay, and so does its place in its
-- parent's fanout list: only a delete (or max_queue_age) stops a child, by
-- unreference. The caller has checked it is empty.
local function forget(t)
  drop_topic(t)
  -- UNLINK: a grouped topic's ring and state may hold 300,000 parked
  -- groups, which DEL freed in the script (153 ms of Redis's time); UNLINK
  -- frees them off the main thread (2.5 ms).
  redis.call('UNLINK', t.info, t.expires, t.group_ring, t.group_jobs, t.group_ready, t.group_state)
  redis.call('ZREM', K_DUE, t.name)
  due_hints[t.name] = nil
  deltas[t.info] = nil
end

-- forget_run_settings drops topic t's run-time settings (its config hash's
-- "run." fields), for a delete: a topic made again under the name starts
-- from conf.ini's ("file." fields, which stay: they are the configuration,
-- written again at each start and reload). The bucket's mark that t
-- delivers over HTTP stays only while conf.ini gives it a deliver_to, as
-- settings.lua keeps it.
local function forget_run_settings(t)
  local fields = redis.call('HKEYS', t.config)
  for _, f in ipairs(fields) do
    if string.sub(f, 1, 4) == 'run.' then redis.call('HDEL', t.config, f) end
  end
  if redis.call('HEXISTS', t.config, 'file.deliver_to') == 0 then
    redis.call('HDEL', K_DEFAULTS, '@deliver ' .. t.name)
  end
end

-- empty says topic t holds no job in any state.
local function empty(t)
  for _, set in ipairs({t.ready, t.delayed, t.reserved, t.buried, t.dead, t.completed, t.cancelled}) do
    if redis.call('EXISTS', set) == 1 then return false end
  end
  return true
end
