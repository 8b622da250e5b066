-- topic_patterns.lua writes conf.ini's topic patterns ([topic.crawl/*])
-- into a bucket's copy of the defaults, in one step: a field "@pattern
-- GLOB" each, whose value is its settings as "setting=value" words
-- (pool/config.go; lib.lua topic_config reads them), and removes the
-- patterns not given.
-- KEYS[1]: the bucket's defaults hash.
-- ARGV: glob, settings, glob, settings...
-- Returns 1 when a pattern's group_* setting changed (pool/config.go lets
-- parked groups back then), else 0.
local key, prefix = KEYS[1], '@pattern '
local given = {}
for i = A.pairs, #ARGV, 2 do given[prefix .. ARGV[i]] = ARGV[i + 1] end
-- group_words are a pattern's group_* settings, as one sorted string.
local function group_words(v)
  local out = {}
  for word in string.gmatch(v or '', '%S+') do
    if string.sub(word, 1, 6) == 'group_' then out[#out + 1] = word end
  end
  table.sort(out)
  return table.concat(out, ' ')
end
local grouped, old = 0, {}
local fields = redis.call('HGETALL', key)
for i = 1, #fields, 2 do
  if string.sub(fields[i], 1, #prefix) == prefix then old[fields[i]] = fields[i + 1] end
end
for f, v in pairs(old) do
  if group_words(v) ~= group_words(given[f]) then grouped = 1 end
  if not given[f] then redis.call('HDEL', key, f) end
end
for f, v in pairs(given) do
  if not old[f] and group_words(v) ~= '' then grouped = 1 end
  redis.call('HSET', key, f, v)
end
return grouped
