-- batch.lua runs a bucket's pushes, pops and acks in one script call. The
-- pool gathers the operations on a bucket that arrive while its earlier calls
-- are in flight (pool/batch.go). Operations that arrive together are
-- concurrent, so any order of them is a correct one; this script runs all the
-- pushes (in their order), then all the deletes, then all the pops, and makes
-- each phase's writes as one command per key (HSET jobs with every record,
-- ZADD with every member...). So under load Redis pays for a script call, and
-- for most of its commands, once per batch instead of once per job. Each
-- operation is as atomic as the batch.
-- KEYS: the shared layout (contract.lua) with every topic the operations name.
-- ARGV: origin, n, the n topic names (in KEYS order), then the operations,
--   each as: kind, k, k topic numbers (1-based, into the names above), then
--   the kind's arguments, named by OP_ARGS (lua/contract.go Ops) and read
--   into op.a.<name>:
--   push     its arguments, lua.Ops["push"] (lua/contract.go says what each is; OP_ARGS.push.record makes
--            the record of them), then a member for each of its fanout children (its topics after the
--            first; op.children) -> {'OK', now ms, due ms (0 when ready), 1 if the topic kept a copy (0:
--            fanout_only), then member and client id of each job discarded to make room}, or {'EXISTS'}
--            when the member is taken, or the topic's limits' refusal: {'FULL', 'max_items' or
--            'max_size', the limit} or {'TOO_BIG', max_item_size}, or {'CHILDREN', names...} when the
--            children given are not the topic's (nothing stored: ask again with those)
--   delete   member, attempt (0: unfenced), mode ('ack': complete it if its topic keeps completed
--            jobs, lib_outcomes.lua; 'unreserved' to refuse a reserved job; '' delete it), result (an
--            ack's, '' none) -> {'OK', client id ('' when it stays, completed), the member and client
--            id of each completed job max_completed dropped, space-separated ('' none), how long (ms)
--            the job is kept completed (0: not kept; keep_completed, keep_results)}, or {'NOT_FOUND'} /
--            {'TOPIC', real topic} / {'STALE', reserves} / {'STATE', 3} / {'TOO_BIG', max_result}
--   pop      mode ('first', 'best', 'peek' or 'take': 'first', the job removed as it is
--            popped whatever its TTR), more ('1': say whether the topic has more ready jobs, else
--            more is 0) -> a pop reply (below)
--   pop_n    mode ('first' or 'best'), n, more: up to n pops -> {'JOBS', more, k, k job replies (lib's
--            reply, flat)}, or the EMPTY reply when there was none
--   ack_pop  member, attempt, more, result: ack the job (delete's 'ack'), then pop 'first' from the other topics
--            -> {'OK', client id, dropped (delete's), pop reply...}, or delete's refusal (nothing popped then)
--   The first topic of push, delete and ack_pop is the job's.
-- A pop reply is {'OK', more, job reply...} where more is 1 when the topic
-- still has ready jobs (a TTR of 0 deletes the job as it is popped: state 0
-- in the reply); in peek mode {'PEEK', topic, priority, member}; otherwise
-- {'EMPTY', ms until the earliest pause with ready jobs ends, or -1, that
-- topic ('' none), and the first topic whose limits held its ready jobs
-- back ('' none)}. Mode
-- 'first' takes the best job of the first topic that has one (gmq's order),
-- 'best' the lowest (priority, id) among them all (beanstalkd's), 'peek' only
-- says which job 'best' would take. Within a topic: lowest priority first,
-- FIFO by id (members sort by id). Paused topics are skipped, and so are
-- topics whose rate or max_reserved holds (lib_limits.lua): the EMPTY
-- reply's wait is then also until a limited topic's next token.
-- Returns one reply per operation, in the operations' order, then, when a
-- pop expired jobs that had client ids, {'DROPPED', member, client id, ...}.
-- Expired jobs are never popped: a pop first sweeps each topic it looks at;
-- if that sweep is cut short (a swarm of jobs expired at once) the topic is
-- left for this call and the pop's EMPTY reply asks for a retry in 1 ms.
--
-- Where to look: this file reads the operations (parse) and holds what the
-- phases share; batch_push.lua runs the pushes (push_phase), batch_pop.lua
-- the pops (pop_phase; a pop is decided in choose: which topics are open,
-- and which job each pop takes), batch_main.lua the deletes (delete_phase)
-- and main, which runs them. The four files are one script, in that order
-- (lua/library.go scriptFiles).

-- In gmq's library the file's functions are defined once, when the
-- library is loaded, and main (at the end) runs on each call: so what one
-- call keeps is declared bare here and set by main (TestScriptStateIsPerCall).

local paused -- topic name -> paused_until ms, read once per call
local may_expire -- topic name -> true when a job that expires ever entered it
local token_fields -- topic name -> its info's tokens and tokens_at (lib_limits.lua)
local function paused_until(t)
  local ms = paused[t.name]
  if not ms then
    local info = redis.call('HMGET', t.info, 'paused_until', 'expiring', 'tokens', 'tokens_at')
    ms = tonumber(info[1] or '0')
    paused[t.name] = ms
    may_expire[t.name] = info[2] ~= false or expiring[t.info]
    token_fields[t.name] = {info[3], info[4]}
  end
  return ms
end

-- now is Redis's clock, one instant for the whole call.
local now

-- limits_for is topic t's limits in this call (lib_limits.lua limits).
local function limits_for(t)
  paused_until(t)
  local f = token_fields[t.name]
  return limits(t, f[1], f[2], now)
end

-- parse reads the operations of ARGV (above): each {kind, ts = its topics'
-- keys, a = its arguments by name, at = a push's first argument's place in
-- ARGV, children = a push's fanout members}.
local function parse()
  local topics = {}
  local n = tonumber(ARGV[A.n])
  for i = 1, n do topics[i] = topic_keys(i, ARGV[A.topics - 1 + i]) end
  local ops = {}
  local i = A.topics + n
  while i <= #ARGV do
    local kind = ARGV[i]
    local names = OP_ARGS[kind]
    if not names then return nil, 'batch: unknown operation ' .. tostring(kind) end
    local op = {kind = kind, ts = {}}
    for j = 1, tonumber(ARGV[i + 1]) do op.ts[j] = topics[tonumber(ARGV[i + 1 + j])] end
    i = i + 2 + #op.ts
    op.a = names.read(ARGV, i)
    i = i + #names
    if kind == 'push' then -- its arguments' place (OP_ARGS.push.record), a member for each fanout child
      op.at = i - #names
      op.children = {}
      for j = 2, #op.ts do
        op.children[j - 1] = ARGV[i]
        i = i + 1
      end
    end
    ops[#ops + 1] = op
  end
  return ops
end

-- of_kinds lists the operations of kind a (or b), in order.
local function of_kinds(ops, a, b)
  local out = {}
  for _, op in ipairs(ops) do
    if op.kind == a or op.kind == b then out[#out + 1] = op end
  end
  return out
end

-- records_of reads the records of the jobs the operations name (op.a.member), at once.
local function records_of(list)
  local members = {}
  for k, op in ipairs(list) do members[k] = op.a.member end
  return hmget(K_JOBS, members)
end

-- reference_named: every topic an operation names that is a fanout child is listed under its
-- parent; not the children a push was given (a broker's list of them may be
-- stale: one deleted since must not come back).
local function reference_named(ops)
  for _, op in ipairs(ops) do
    local named = #op.ts
    if op.kind == 'push' then named = 1 end
    for j = 1, named do reference(op.ts[j], now, op.kind ~= 'push') end
  end
end
