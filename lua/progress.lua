-- progress.lua records a reserved job's progress, as its consumer reports
-- it, and gives it a fresh TTR as a touch does: its progress (a JSON
-- value's compact text, at most its topic's max_result bytes), and a line
-- of its log (cut to 1 KiB, between characters; the log keeps its topic's
-- max_log lines, the oldest dropped). A job cancelled while held ends
-- cancelled instead.
-- KEYS: the shared layout (contract.lua) with the job's topic.
-- ARGV: origin, member, topic, attempt (0: unfenced), progress ('' none), log ('' none).
-- Returns {'OK', job reply...} or {'NOT_FOUND'} / {'TOPIC', t} / {'STALE', n} / {'STATE', state} /
-- {'TOO_BIG', max_result, 'max_result'} / {'CANCELLED', client id to drop}.
local member = ARGV[A.member]
local t = topic_keys(1, ARGV[A.topic])
local job, err = fetch_reserved(member, ARGV[A.topic], tonumber(ARGV[A.attempt]))
if not job then return err end
local cancelled = cancel_held(t, member, job)
if cancelled then return cancelled end
local now = now_ms()
local progress, line = ARGV[A.progress], ARGV[A.log]
if progress ~= '' then
  local most = outcomes.max_result(t)
  if #progress > most then return REPLY.job_call.TOO_BIG(most, 'max_result') end
  job[F_PROGRESS] = progress
end
if line ~= '' then
  local cap = tonumber(topic_config(t).max_log or '100')
  if cap > 0 then
    local log = job[F_LOG] and cjson.decode(job[F_LOG]) or {}
    log[#log + 1] = {now, cut_text(line, 1024)}
    while #log > cap do table.remove(log, 1) end
    job[F_LOG] = cjson.encode(log)
  end
end
emit(t, member, job, 'progress', progress)
job[F_DUE] = now + job[F_TTR]
redis.call('ZADD', t.reserved, job[F_DUE], member)
save(member, job)
return answer(member, job)
