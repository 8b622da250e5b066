-- topic_patterns.lua writes conf.ini's topic patterns ([topic.crawl/*])
-- into a bucket's copy of the defaults, in one step: a field "@pattern
-- GLOB" each, whose value is its settings as "setting=value" words
-- (pool/config.go; lib.lua topic_config reads them), and removes the
-- patterns not given.
-- KEYS[1]: the bucket's defaults hash.
-- ARGV: glob, settings, glob, settings...
local key, prefix = KEYS[1], '@pattern '
local given = {}
for i = 1, #ARGV, 2 do given[prefix .. ARGV[i]] = ARGV[i + 1] end
for _, f in ipairs(redis.call('HKEYS', key)) do
  if string.sub(f, 1, #prefix) == prefix and not given[f] then redis.call('HDEL', key, f) end
end
for f, v in pairs(given) do redis.call('HSET', key, f, v) end
return 1
