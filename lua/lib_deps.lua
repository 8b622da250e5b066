-- lib_deps.lua, after lib_outcomes.lua (see lib.lua): jobs that wait for
-- others (a push's "after", docs/workflows.md "Dependencies"). A dependent
-- is pushed WAITING (in t.after) with F_AFTER, the JSON {p: the members it
-- still waits for, f: 'cancel' or 'run' (on_dependency_failure), r: their
-- results by member, with_results only}. Each of its dependencies, in any
-- bucket, was told of it first (deps.lua register: F_DEPENDENTS), and its
-- end leaves the dependent a notice (lib.lua announce_end), which the
-- pool hands to deps.lua tell in the dependent's bucket: deps.told.
-- Store format 5 (pool/deps.go): an older broker would end a dependency
-- without telling anyone.
local deps = {}
do
  -- deps.hold makes a pushed job (settled, not yet entered) wait for the
  -- dependencies in after (F_AFTER's JSON, as the pool wrote it): WAITING
  -- while any is pending; its delay counts from when the last completes.
  function deps.hold(job, after)
    job[F_AFTER] = after
    if #cjson.decode(after).p > 0 then job[F_STATE], job[F_DUE] = WAITING, 0 end
  end

  -- deps.register tells the job member (its record, read) that dependent
  -- (of topic) waits for it, unless it was told before. It returns how the
  -- job stands for the dependent: 'pending', or how it ended
  -- ('completed', with its result, or 'dead', 'cancelled', 'expired'), or
  -- 'unknown' when there is no such job (never pushed, or ended and gone).
  -- MAX_DEPENDENTS bounds the list ('crowded' past it): every state change
  -- of the job rewrites it.
  local MAX_DEPENDENTS = 1000
  function deps.register(member, job, dependent, topic)
    if not job then return 'unknown' end
    local s = job[F_STATE]
    if s == COMPLETED then return 'completed', job[F_RESULT] end
    if s == DEAD then return 'dead' end
    if s == CANCELLED then return 'cancelled' end
    if s == EXPIRED then return 'expired' end
    local list = job[F_DEPENDENTS] or ''
    local entry = dependent .. ' ' .. topic
    if string.find('\n' .. list, '\n' .. entry .. '\n', 1, true) then return 'pending' end
    local _, n = string.gsub(list, '\n', '')
    if n >= MAX_DEPENDENTS then return 'crowded' end
    job[F_DEPENDENTS] = list .. entry .. '\n'
    save(member, job)
    return 'pending'
  end

  -- deps.told tells a waiting job (member, of topic t) that its dependency
  -- dep ended, how ('completed' with result, or another end): a completion
  -- (or any end, with on_dependency_failure run) takes dep off the list, and
  -- the last one makes the job ready, or delayed by its own delay; another
  -- end cancels it (its own dependents told in turn). A notice of a
  -- dependency not listed (told before) changes nothing. It returns the
  -- job's state after ('' unchanged) and the client id to drop.
  function deps.told(t, member, job, dep, how, result, now)
    if job[F_STATE] ~= WAITING then return '', '' end
    local after = cjson.decode(job[F_AFTER])
    local at
    for i, m in ipairs(after.p) do
      if m == dep then at = i end
    end
    if not at then return '', '' end
    table.remove(after.p, at)
    if how ~= 'completed' and after.f ~= 'run' then
      job[F_AFTER] = cjson.encode(after)
      job[F_LAST_ERROR] = 'dependency ' .. string.gsub(dep, '^0+', '') .. ' ' .. how
      note(t, member, job, 'dependency_failed', job[F_LAST_ERROR])
      local cid = outcomes.cancel(t, member, job)
      return CANCELLED, cid
    end
    if type(after.r) == 'table' and how == 'completed' then after.r[dep] = result or cjson.null end
    job[F_AFTER] = cjson.encode(after)
    if #after.p > 0 then
      save(member, job)
      return '', ''
    end
    redis.call('ZREM', t.after, member)
    settle(job, job[F_DELAY] or 0, now)
    note(t, member, job, 'dependencies_met')
    enter(t, member, job)
    move_state(WAITING, job[F_STATE])
    save(member, job)
    return job[F_STATE], ''
  end
end
