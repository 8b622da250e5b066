-- settings.lua writes one layer of topic settings in one step: the fields of
-- a layer (prefix "file." or "run." in a topic's config hash, or "" in a
-- bucket's copy of the defaults) given in ARGV, and with replace, removes the
-- layer's other fields; a value of '' removes its field. With mark, it notes
-- in the bucket's defaults that a topic there has settings of its own
-- (lib.lua CONFIGURED), which is never removed, and whether the topic
-- delivers over HTTP ('@deliver <topic>' while either layer has
-- deliver_to: the brokers look for these marks, pool/webhook.go).
-- KEYS[1]: the hash to write; KEYS[2]: the bucket's defaults (for mark).
-- ARGV: prefix, replace ('1' or ''), mark ('1' or ''), topic (with mark),
-- then setting, value pairs.
-- Returns 1 when a group_* setting of the layer changed (its groups parked
-- under the old value must come back: pool/config.go), else 0.
local key, prefix, mark = KEYS[1], ARGV[A.prefix], '@configured'
local given = {}
for i = A.pairs, #ARGV, 2 do given[prefix .. ARGV[i]] = ARGV[i + 1] end
local old = {}
local fields = redis.call('HGETALL', key)
for i = 1, #fields, 2 do old[fields[i]] = fields[i + 1] end
local grouped = 0
local function note(f, v)
  if (old[f] or '') ~= v and string.sub(f, #prefix + 1, #prefix + 6) == 'group_' then grouped = 1 end
end
if ARGV[A.replace] == '1' then
  for f in pairs(old) do
    -- Fields starting with '@' are the bucket's marks (lib.lua), not settings.
    if string.sub(f, 1, 1) ~= '@' and string.sub(f, 1, #prefix) == prefix and given[f] == nil then
      redis.call('HDEL', key, f)
      note(f, '')
    end
  end
end
for f, v in pairs(given) do
  note(f, v)
  if v == '' then redis.call('HDEL', key, f) else redis.call('HSET', key, f, v) end
end
if ARGV[A.mark] == '1' then
  redis.call('HSET', KEYS[2], mark, '1')
  local deliver = '@deliver ' .. ARGV[A.topic]
  if redis.call('HEXISTS', key, 'run.deliver_to') == 1 or redis.call('HEXISTS', key, 'file.deliver_to') == 1 then
    redis.call('HSET', KEYS[2], deliver, '1')
  else
    redis.call('HDEL', KEYS[2], deliver)
  end
end
return grouped
