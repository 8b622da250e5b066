-- topic_stats.lua reads a topic's counts and counters in one consistent view.
-- KEYS: the shared layout (lib.lua) with one topic.
-- ARGV: origin, topic, urgent priority bound (jobs below it count as urgent).
-- Returns {known (0/1), now, ready, urgent, delayed, reserved, buried, paused until ms,
--          pause ms, total jobs, total reserves, total deletes, total pauses, bytes of bodies}.
local t = topic_keys(1, ARGV[2])
local info = redis.call('HMGET', t.info, 'paused_until', 'pause_ms', 'total_jobs', 'total_reserves',
                        'total_deletes', 'total_pauses', 'bytes')
return {redis.call('SISMEMBER', K_TOPICS, t.name), now_ms(),
        redis.call('ZCARD', t.ready), redis.call('ZCOUNT', t.ready, '-inf', '(' .. ARGV[3]),
        redis.call('ZCARD', t.delayed), redis.call('ZCARD', t.reserved), redis.call('ZCARD', t.buried),
        tonumber(info[1] or '0'), tonumber(info[2] or '0'), tonumber(info[3] or '0'),
        tonumber(info[4] or '0'), tonumber(info[5] or '0'), tonumber(info[6] or '0'), tonumber(info[7] or '0')}
