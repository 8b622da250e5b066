-- pop_best_plain: a reserve of the best job of topics in several buckets
-- (a beanstalkd reserve watching tubes that hash to different buckets), in
-- one call on a Redis that is not a Cluster, where batch.lua's path makes a
-- peek call a bucket and then the pop (pool PopBest). It is issue 50's
-- plain path (pool/plain.go; lib_plain.lua): every bucket must have no
-- settings and every topic be open (plain.open), or it answers
-- plain.refusal's, having changed nothing, and the pool takes batch.lua's
-- path. It looks at each topic's head as batch.lua's best pop does (the
-- lowest priority, then the lowest member: goes_before), takes the best
-- one (plain.take) and reserves it (plain.reserve): the same writes as a
-- pop_plain.lua of that topic. It answers as pop_plain.lua does, then the
-- place (1-based) in counts of the bucket it popped from, whose totals the
-- reply's TOTALS are: {{OK, more, the job's reply}, {TOTALS, ...}, bucket},
-- or {{EMPTY, -1, '', ''}} when no topic has a ready job.
-- A call that runs past deadline (Redis's clock, ms; 0: none), as one
-- queued while Redis stalled runs after its caller gave up, answers
-- plain.refusal('late') having changed nothing, where it would reserve a
-- job for no one until its TTR.
-- KEYS: a bucket's keys, then its topics' (pool keys.withTopics), for each
-- bucket in turn. ARGV: the caller, then A's names: more, deadline, counts
-- (each bucket's number of topics, joined by commas), then every topic's
-- name in KEYS's order.
local function main()
  local all, counts = KEYS, {}
  for n in string.gmatch(ARGV[A.counts], '%d+') do counts[#counts + 1] = tonumber(n) end
  local now = plain.now()
  local deadline = tonumber(ARGV[A.deadline])
  if deadline > 0 and now > deadline then return plain.refusal('late') end
  local best, best_pri, best_member
  local first_key, first_name = 1, A.topics
  for b, n in ipairs(counts) do
    -- A bucket of n topics spans as many keys as the place of an n+1-th
    -- topic's first key, less one (topic_keys's at). They are copied one by
    -- one: unpack refuses a bucket of a few hundred topics.
    local span = topic_keys(n + 1, '').at
    local keys = {}
    for k = 1, span do keys[k] = all[first_key + k - 1] end
    bind(keys, ARGV)
    if plain.settings() then return plain.refusal('settings', ARGV[first_name]) end
    for i = 1, n do
      local name = ARGV[first_name + i - 1]
      if plain.child(name) then return plain.refusal('topic', name) end
      local t = topic_keys(i, name)
      if not plain.open(t, now) then return plain.refusal('topic', name) end
      local head = redis.call('ZRANGE', t.ready, 0, 0, 'WITHSCORES')
      if head[1] then
        local pri = tonumber(head[2])
        if goes_before(pri, head[1], best_pri, best_member) then
          best, best_pri, best_member = {keys = keys, at = i, name = name, bucket = b}, pri, head[1]
        end
      end
    end
    first_key, first_name = first_key + span, first_name + n
  end
  if not best then return REPLY.pop_best_plain(REPLY.pop.EMPTY(-1, '', '')) end
  bind(best.keys, ARGV)
  local t = topic_keys(best.at, best.name)
  local member, job = plain.take(t)
  if job == true then return plain.refusal('job') end
  return REPLY.pop_best_plain(REPLY.pop.OK(plain.reserve(t, member, job, now, ARGV[A.more])),
    REPLY.batch_extra.TOTALS(K_STATS, 'total_reserves', 1, t.info, 'total_reserves', 1), best.bucket)
end
return main()
