"""Batch pop and batch ack through the installed Python client: argv = base URL, topic."""
import sys

from gmq_client import Client, GmqError

c = Client(sys.argv[1])
topic = sys.argv[2]
c.push_batch([{"topic": topic, "body": str(i)} for i in range(5)])
jobs = c.pop_many([topic], 3, timeout=1)
assert [j["body"] for j in jobs] == ["0", "1", "2"], jobs
stale = {"id": jobs[2]["id"], "attempt": 9}  # an older (here: unknown) delivery, by attempt alone
answer = c.ack_many([jobs[0], jobs[1], stale], [topic], count=10, timeout=1)
assert len(answer["acked"]) == 2 and answer["failed"][0]["status"] == 409, answer
assert [j["body"] for j in answer["jobs"]] == ["3", "4"], answer
answer = c.ack_many(answer["jobs"] + [jobs[2]])
assert len(answer["acked"]) == 3 and not answer["failed"], answer
assert c.pop_many([topic], 3, timeout=0.1) == []

# Failures: a job's own policy of two attempts; fail, then fail_many to dead.
c.push(topic, "flaky", retry={"max_attempts": 2, "backoff": "fixed", "base": 0.01})
job = c.pop([topic], timeout=1)
assert job is not None
assert c.fail(job["id"], job["attempt"], "boom")["state"] == "delayed"
job = c.pop([topic], timeout=2)
assert job is not None
answer = c.fail_many([job, {"id": "nobody"}], "boom again")
assert answer["jobs"][0]["state"] == "dead" and answer["failed"][0]["status"] == 404, answer

# A waiting job changed in place: ready now, first, its new body; a reserved one is refused.
job_id = c.push(topic, "draft", delay=3600, priority=10)
job = c.update(job_id, delay=0, priority=1, body="final")
assert job["state"] == "ready" and job["priority"] == 1 and job["body"] == "final", job
job = c.pop([topic], timeout=1)
assert job is not None and job["id"] == job_id and job["body"] == "final", job
try:
    c.update(job_id, priority=5)
    raise AssertionError("a reserved job was changed")
except GmqError as e:
    assert e.status == 409, e
print("ok")
