-- purge.lua removes up to n jobs of a topic in the listed states (each
-- state's set in its order), one bounded step of a flush or a topic delete;
-- the caller repeats it until a step removes fewer than n, so no call holds
-- Redis long whatever the topic's size, and a flush cut short by a crash is
-- finished by running it again.
-- KEYS: the shared layout (contract.lua) with one topic.
-- ARGV: origin, topic, n, states (comma-separated set names: STATE_SET's,
-- ready, delayed, reserved, buried, dead, completed, cancelled, after).
-- Returns {removed, then member and client id of each removed job that had one}.
local t = topic_keys(1, ARGV[A.topic])
local left = tonumber(ARGV[A.n])
local state_of = {} -- set name -> its state
for state, set in pairs(STATE_SET) do state_of[set] = state end
local removed, dropped = 0, {} -- dropped: the removed jobs' member, client id pairs
for name in string.gmatch(ARGV[A.states], '[^,]+') do
  if left <= 0 then break end
  local members = redis.call('ZRANGE', t[name], 0, left - 1)
  if #members > 0 then
    local records = redis.call('HMGET', K_JOBS, unpack(members))
    redis.call('ZREM', t[name], unpack(members))
    redis.call('HDEL', K_JOBS, unpack(members))
    redis.call('HDEL', K_BODIES, unpack(members))
    for i, member in ipairs(members) do
      if records[i] then
        local job = cmsgpack.unpack(records[i])
        if name == 'ready' then groups.remove(t, member, job) end
        if name == 'reserved' then free_slot(t, job) end
        drop_bytes(t, job)
        unindex_expiry(t, member, job)
        if name ~= 'completed' and name ~= 'dead' and name ~= 'cancelled' then announce_end(member, job, 'deleted') end
        local cid = job[F_CID]
        if cid and cid ~= '' then
          dropped[#dropped + 1] = member
          dropped[#dropped + 1] = cid
        end
      end
    end
    count(STATE_COUNTER[state_of[name]], -#members)
    count('total_flushed', #members)
    count_topic(t, 'total_flushed', #members)
    removed = removed + #members
    left = left - #members
  end
end
local out = REPLY.purge(removed)
for _, v in ipairs(dropped) do out[#out + 1] = v end
return out
