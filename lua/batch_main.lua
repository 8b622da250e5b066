-- batch_main.lua, after batch_pop.lua: batch.lua's delete phase (phase 2)
-- and main, which runs the three.

-- delete_phase runs the deletes, and the ack of each ack_pop, in order (phase 2).
local function delete_phase(ops)
  local deletes = of_kinds(ops, 'delete', 'ack_pop')
  if #deletes > 0 then
    local records = records_of(deletes)
    local gone = {}
    for k, op in ipairs(deletes) do
      local member = op.a.member
      local mode = op.a.mode
      if op.kind == 'ack_pop' then mode = 'ack' end
      local cid, refused, kept, dropped, keep = ack_job(op.ts[1], member, ack_record(gone, member, records[k]),
        tonumber(op.a.attempt), mode, op.a.result, gathers.add)
      if refused then
        op.reply = refused
        if refused[1] == R.CANCELLED then gone[member] = 'kept' end -- cancelled now: read it anew
      else
        gone[member] = kept and 'kept' or 'deleted'
        op.acked, op.cid, op.dropped = true, cid, dropped
        if op.kind == 'delete' then op.reply = REPLY.ack.OK(cid, dropped, keep) end
      end
    end
    gathers.flush()
  end
end

-- main: take the short path when it may (lib_lean.lua); else start the
-- call's state, parse the operations, run the three phases, answer in order.
local function main()
  deferred.totals = REPLY.batch_extra.TOTALS() -- the broker adds up this call's totals (lib.lua flush)
  local short, err = lean.run() -- a call of plain operations only (lib_lean.lua)
  if err then return redis.error_reply(err) end
  if short then return short end
  paused, may_expire, now = renew(paused), renew(may_expire), now_ms()
  token_fields = renew(token_fields)
  held, bytes, discards, listed, plain_of = renew(held), renew(bytes), nil, renew(listed), renew(plain_of)
  picks, sweeps = renew(picks), renew(sweeps)
  local ops
  ops, err = parse()
  if not ops then return redis.error_reply(err) end
  reference_named(ops)
  push_phase(ops)
  delete_phase(ops)
  local pops
  pops, err = pop_phase(ops)
  if not pops then return redis.error_reply(err) end
  pop_replies(pops)
  local out = {}
  for k, op in ipairs(ops) do out[k] = op.reply end
  if #dropped_cids > 0 then
    local dropped = REPLY.batch_extra.DROPPED()
    for _, v in ipairs(dropped_cids) do dropped[#dropped + 1] = v end
    out[#out + 1] = dropped
  end
  return out
end
return main()
