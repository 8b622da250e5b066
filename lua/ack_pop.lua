-- ack_pop.lua acks a job and pops the next from the consumer's topics in one
-- call, when they all live in the job's bucket: a consumer's "done with that,
-- next please" (kestrel's close/open) at one round trip.
-- KEYS: the shared layout (lib.lua): topic slot 1 is the acked job's topic,
--       slots 2..n+1 the topics to pop from, in the consumer's order.
-- ARGV: origin, member, topic, attempt (0: unfenced), n, then the n topic names.
-- Returns {'OK', client id of the acked job, pop.lua's reply...}, or for the
-- ack {'NOT_FOUND'} / {'TOPIC', real topic} / {'STALE', reserves} (nothing popped then).
local member = ARGV[2]
local t = topic_keys(1, ARGV[3])
local job, err = fetch(member, ARGV[3], tonumber(ARGV[4]))
if not job then return err end
local cid = job[F_CID]
delete_job(t, member, job)
local r = pop_from(2, tonumber(ARGV[5]), 6, 'first')
table.insert(r, 1, cid)
table.insert(r, 1, 'OK')
return r
