-- topic_stats.lua reads topics' counts and counters, each in one consistent
-- view (all of them in one: the script is atomic). Reading many topics of a
-- bucket in one call pays lib.lua's prelude (~20 us) once, not per topic.
-- KEYS: the shared layout (lib.lua) with the topics read.
-- ARGV: origin, urgent priority bound (jobs below it count as urgent), then the topics' names.
-- Returns, for each topic, {known (0/1), now, ready, urgent, delayed, reserved, buried, paused until ms,
--          pause ms, total jobs, total reserves, total deletes, total pauses, bytes of bodies,
--          total discarded, total expired, created ms of the next ready job (0: none), its fanout
--          children (space-separated, '' for none), dead, total failures, total dead, dead retried,
--          dead dropped (by retention or max_dead), then the topic's
--          effective settings as setting, value pairs}.
local function stats(t, urgent)
  local info = redis.call('HMGET', t.info, 'paused_until', 'pause_ms', 'total_jobs', 'total_reserves',
                          'total_deletes', 'total_pauses', 'bytes', 'total_discarded', 'total_expired',
                          'total_failures', 'total_dead', 'dead_retried', 'dead_dropped')
  local head, created = redis.call('ZRANGE', t.ready, 0, 0), 0
  if head[1] then
    local job = load(head[1])
    if job then created = job[F_CREATED] end
  end
  local out = {redis.call('SISMEMBER', K_TOPICS, t.name), now_ms(),
          redis.call('ZCARD', t.ready), redis.call('ZCOUNT', t.ready, '-inf', urgent),
          redis.call('ZCARD', t.delayed), redis.call('ZCARD', t.reserved), redis.call('ZCARD', t.buried),
          tonumber(info[1] or '0'), tonumber(info[2] or '0'), tonumber(info[3] or '0'),
          tonumber(info[4] or '0'), tonumber(info[5] or '0'), tonumber(info[6] or '0'), tonumber(info[7] or '0'),
          tonumber(info[8] or '0'), tonumber(info[9] or '0'), created,
          redis.call('HGET', K_FANOUT, t.name) or '', redis.call('ZCARD', t.dead),
          tonumber(info[10] or '0'), tonumber(info[11] or '0'), tonumber(info[12] or '0'), tonumber(info[13] or '0')}
  for k, v in pairs(topic_config(t)) do
    out[#out + 1] = k
    out[#out + 1] = v
  end
  return out
end

local urgent, all = '(' .. ARGV[2], {}
for i = 3, #ARGV do all[i - 2] = stats(topic_keys(i - 2, ARGV[i]), urgent) end
return all
