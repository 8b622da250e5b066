-- topic_stats.lua reads topics' counts and counters, each in one consistent
-- view (all of them in one: the script is atomic). Reading many topics of a
-- bucket in one call pays the call's fixed cost once, not per topic.
-- KEYS: the shared layout (contract.lua) with the topics read.
-- ARGV: origin, urgent priority bound (jobs below it count as urgent), then the topics' names.
-- Returns, for each topic, its fields by contract.lua's S names (Go's
-- lua.TopicStat), then the topic's effective settings as setting, value pairs.
-- INFO_STATS are the fields read from the topic's info hash: its counter's name, and where it goes.
local INFO_STATS = {{'paused_until', S.PAUSED_UNTIL}, {'pause_ms', S.PAUSE_MS}, {'total_jobs', S.TOTAL_JOBS},
                    {'total_reserves', S.TOTAL_RESERVES}, {'total_deletes', S.TOTAL_DELETES},
                    {'total_pauses', S.TOTAL_PAUSES}, {'bytes', S.BYTES}, {'total_discarded', S.TOTAL_DISCARDED},
                    {'total_expired', S.TOTAL_EXPIRED}, {'total_failures', S.TOTAL_FAILURES},
                    {'total_dead', S.TOTAL_DEAD}, {'dead_retried', S.DEAD_RETRIED}, {'dead_dropped', S.DEAD_DROPPED},
                    {'created', S.CREATED}, {'total_limited', S.TOTAL_LIMITED}, {'limited_ms', S.LIMITED_MS},
                    {'groups_forgotten', S.GROUPS_FORGOTTEN}, {'total_completed', S.TOTAL_COMPLETED},
                    {'total_cancelled', S.TOTAL_CANCELLED}}
local info_names = {}
for k, f in ipairs(INFO_STATS) do info_names[k] = f[1] end

local function stats(t, urgent)
  local out = {}
  local info = redis.call('HMGET', t.info, unpack(info_names))
  for k, f in ipairs(INFO_STATS) do out[f[2]] = tonumber(info[k] or '0') end
  local head, created = redis.call('ZRANGE', t.ready, 0, 0), 0
  if head[1] then
    local job = load(head[1])
    if job then created = job[F_CREATED] end
  end
  out[S.KNOWN], out[S.NOW] = redis.call('SISMEMBER', K_TOPICS, t.name), now_ms()
  out[S.READY], out[S.URGENT] = redis.call('ZCARD', t.ready), redis.call('ZCOUNT', t.ready, '-inf', urgent)
  out[S.DELAYED], out[S.RESERVED] = redis.call('ZCARD', t.delayed), redis.call('ZCARD', t.reserved)
  out[S.BURIED], out[S.DEAD] = redis.call('ZCARD', t.buried), redis.call('ZCARD', t.dead)
  out[S.COMPLETED], out[S.CANCELLED] = redis.call('ZCARD', t.completed), redis.call('ZCARD', t.cancelled)
  out[S.OLDEST_READY], out[S.CHILDREN] = created, redis.call('HGET', K_FANOUT, t.name) or ''
  local cfg = topic_config(t)
  out[S.TOKENS] = -1
  if tonumber(cfg.rate or '0') > 0 then
    local f = redis.call('HMGET', t.info, 'tokens', 'tokens_at')
    out[S.TOKENS] = math.floor(limits(t, f[1], f[2], now_ms()).tokens)
  end
  out[S.GROUPS], out[S.BUSIEST_GROUPS] = 0, ''
  if groups.on(t) then
    out[S.GROUPS] = redis.call('ZCARD', t.group_ready)
    local busiest, lines = redis.call('ZREVRANGE', t.group_ready, 0, 9, 'WITHSCORES'), {}
    for k = 1, #busiest, 2 do
      local g = busiest[k]
      lines[#lines + 1] = g .. '\t' .. busiest[k + 1] .. '\t' .. (redis.call('HGET', t.group_state, 'r:' .. g) or '0')
    end
    out[S.BUSIEST_GROUPS] = table.concat(lines, '\n')
  end
  local n = S.LEN
  for k, v in pairs(cfg) do
    out[n + 1], out[n + 2] = k, v
    n = n + 2
  end
  return out
end

local urgent, all = '(' .. ARGV[A.urgent], {}
for i = A.topics, #ARGV do all[i - A.topics + 1] = stats(topic_keys(i - A.topics + 1, ARGV[i]), urgent) end
return all
