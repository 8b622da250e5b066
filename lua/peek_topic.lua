-- peek_topic.lua reads the next job of a topic in one state: ready (the one a
-- pop would take, ignoring pause), delayed (soonest due) or buried (buried
-- longest ago). Peeking at ready or delayed jobs first expires the topic's
-- jobs whose time ran out (kestrel's peek does), so none is shown. A peek at
-- a fanout child references it (lib_topics.lua).
-- KEYS: the shared layout (contract.lua) with one topic.
-- ARGV: origin, topic, state set ('ready', 'delayed' or 'buried').
-- Returns {'OK', job reply...} or {'NOT_FOUND'}, then the member and client id
-- of each job it expired that had one.
local t = topic_keys(1, ARGV[A.topic])
local set = ARGV[A.set]
reference(t, now_ms(), true)
local function with_dropped(r)
  for _, v in ipairs(dropped_cids) do r[#r + 1] = v end
  return r
end
-- With no buried job, the oldest dead one (shown as buried to beanstalkd's clients).
if set == 'buried' and redis.call('EXISTS', t.buried) == 0 then set = 'dead' end
if set ~= 'buried' and set ~= 'dead' then
  local now = now_ms()
  if sweep_expired(t, now, 1000) == 1000 then
    -- A swarm expired at once: show the first that has not.
    for _, member in ipairs(redis.call('ZRANGE', t[set], 0, 999)) do
      local job = load(member)
      if (job[F_EXPIRES] or 0) == 0 or job[F_EXPIRES] > now then return with_dropped(answer(member, job, REPLY.peek_topic.OK)) end
    end
    return with_dropped(REPLY.peek_topic.NOT_FOUND())
  end
end
local head = redis.call('ZRANGE', t[set], 0, 0)
if not head[1] then return with_dropped(REPLY.peek_topic.NOT_FOUND()) end
return with_dropped(answer(head[1], load(head[1]), REPLY.peek_topic.OK))
