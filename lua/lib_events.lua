-- lib_events.lua, after lib.lua: a job's transitions noted where a topic
-- asks for them, in its history (job_history) and its bucket's events
-- stream (events = true); a topic with neither costs a lookup of settings
-- the call has read. It uses lib.lua's cut_text and topic_config.
-- emit and note, with the constants only they use in their block.
local emit, note
do
-- EVENTS_MAXLEN bounds each bucket's events stream (XADD MAXLEN ~, so a
-- little more may stay): what a consumer that fell behind may catch up on.
local EVENTS_MAXLEN = '10000'
-- EVENT_DETAIL bounds an event's detail (a result, an error, a progress),
-- bytes: a longer one is cut ('cut' 1), and the job itself has it whole.
local EVENT_DETAIL = 1024

-- STREAMED are the transitions that go to the events stream (with
-- 'timed_out' as 'stalled', and 'progress', which emit is given alone).
local STREAMED = ' pushed reserved failed dead cancelled expired completed '

-- emit adds an event of job (member, of topic t) to its bucket's stream
-- when t has events = true: its type, topic, member, client id, attempt
-- and detail (a completed job's result, a failure's error, a progress; at
-- most EVENT_DETAIL bytes, cut past it).
-- A topic without it costs one lookup.
function emit(t, member, job, kind, detail)
  if topic_config(t).events ~= 'true' then return end
  detail = detail or ''
  local cut = '0'
  if #detail > EVENT_DETAIL then detail, cut = cut_text(detail, EVENT_DETAIL), '1' end
  redis.call('XADD', K_EVENTS, 'MAXLEN', '~', EVENTS_MAXLEN, '*', 'type', kind, 'topic', t.name, 'job', member,
    'cid', job[F_CID] or '', 'attempt', job[F_RESERVES] or 0, 'detail', detail, 'cut', cut)
end

-- note records a transition of job (member, of topic t): in its history
-- (F_HISTORY: a JSON array of [ms, event, attempt, detail]) when t keeps
-- one (job_history: the entries kept, the oldest dropped; 0, the default,
-- keeps none), and in its bucket's events stream when t has events (emit).
-- The script that makes a transition notes it before it saves the record,
-- so both are written with it; the history goes with the job. A topic with
-- neither costs a lookup of settings the call has read.
function note(t, member, job, event, detail)
  local cfg = topic_config(t)
  local keep = tonumber(cfg.job_history or '0')
  if keep > 0 then
    local h = job[F_HISTORY] and cjson.decode(job[F_HISTORY]) or {}
    h[#h + 1] = {now_ms(), event, job[F_RESERVES] or 0, cut_text(detail or '', 1024)}
    while #h > keep do table.remove(h, 1) end
    job[F_HISTORY] = cjson.encode(h)
  end
  if cfg.events == 'true' then
    if event == 'timed_out' then
      emit(t, member, job, 'stalled')
    elseif string.find(STREAMED, ' ' .. event .. ' ', 1, true) then
      if event == 'completed' then detail = job[F_RESULT] end
      emit(t, member, job, event, detail)
    end
  end
end
end
