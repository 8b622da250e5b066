-- delete.lua removes a job in any state: the ack of a consumer and the delete of
-- an operator. An ack names its delivery (attempt) so that a late ack of a job
-- that was redelivered since changes nothing.
-- KEYS: the shared layout (lib.lua) with the job's topic.
-- ARGV: origin, member, topic, attempt (0: unfenced), 'unreserved' to refuse a reserved job ('' otherwise).
-- Returns {'OK', client id} or {'NOT_FOUND'} / {'TOPIC', real topic} / {'STALE', reserves} / {'STATE', 3}.
local member = ARGV[2]
local t = topic_keys(1, ARGV[3])
local job, err = fetch(member, ARGV[3], tonumber(ARGV[4]))
if not job then return err end
if ARGV[5] == 'unreserved' and job[F_STATE] == RESERVED then return {'STATE', RESERVED} end
delete_job(t, member, job)
return {'OK', job[F_CID]}
