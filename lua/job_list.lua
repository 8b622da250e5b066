-- job_list.lua lists a page of a topic's jobs in one state, in the state's
-- order (ready: the order pops take them; delayed: soonest due; reserved:
-- soonest TTR end; buried: buried longest ago; dead: died longest ago;
-- completed and cancelled: newest first, by when each is removed, which is the order they
-- completed in unless some have a keep_completed of their own), each with
-- the first bytes of its body.
-- KEYS: the shared layout (contract.lua) with one topic.
-- ARGV: origin, topic, state set name, offset, limit, preview bytes.
-- Returns {total in the state, then a job reply per job}.
local t = topic_keys(1, ARGV[A.topic])
local set = t[ARGV[A.set]]
local offset, limit, preview = tonumber(ARGV[A.offset]), tonumber(ARGV[A.limit]), tonumber(ARGV[A.preview])
local total = redis.call('ZCARD', set)
local out = REPLY.job_list(total) -- then the jobs' replies
-- An offset past the end is an empty page. It is checked here, before any
-- sum: an offset beyond 2^53 is an inexact double, and Lua would pass a sum
-- to ZRANGE as "1e+17", which Redis refuses as not an integer. Within the
-- set, every index is far below that.
if limit <= 0 or offset < 0 or offset >= total then return out end
local now = now_ms()
local range = {'ZRANGE', set, offset, math.min(offset + limit, total) - 1}
if set == t.completed or set == t.cancelled then range[5] = 'REV' end
for _, member in ipairs(redis.call(unpack(range))) do
  local job = load(member)
  if job then
    local body = jobbody.read(member, job) or ''
    job[F_BODY] = nil -- the preview goes instead
    for _, v in ipairs({reply(member, job, string.sub(body, 1, preview), now)}) do out[#out + 1] = v end
  end
end
return out
