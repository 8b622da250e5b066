"""Completed jobs through the installed Python client: argv = base URL, topic.

The topic keeps its acked jobs an hour, completed, with results of at most
64 bytes. A worker's handler returns each job's result, which its ack
carries (the ack and pop, and the ack at its stop): get_job shows the job
completed with it. A result the worker cannot send (not JSON) or gmq cannot
keep (413) is dropped, the job acked without it. The plain acks carry
results too (ack, ack_and_pop, ack_many); a push's keep_completed overrides
its topic's, 0 included. Prints "ok"."""
import json
import logging
import sys
import threading
import urllib.request
from typing import Any, List

from gmq_client import Client, GmqError, Job

url, topic = sys.argv[1], sys.argv[2]
c = Client(url)


def configure(name: str, **settings: Any) -> None:
    """Set a topic's settings (the client has no call for it)."""
    req = urllib.request.Request(url + "/api/v1/topics/%s/config" % name, data=json.dumps(settings).encode(),
                                 method="PUT", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as resp:
        assert resp.status == 200


def completed(job_id: str, result: Any) -> Job:
    """Require job_id completed, with result (None: none)."""
    job = c.get_job(job_id)
    assert job["state"] == "completed" and job["completed_at"] and job.get("result") == result, job
    assert result is not None or "result" not in job, job
    return job


def popped(job_id: str) -> Job:
    """Push job_id to the topic and pop it."""
    c.push(topic, "x", job_id=job_id, ttr=30)
    job = c.pop([topic], timeout=1)
    assert job is not None and job["id"] == job_id, job
    return job


class Warnings(logging.Handler):
    """Keeps the worker's warnings, for the script to check (its output is "ok" alone)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


configure(topic, keep_completed=3600, max_result=64)

# The worker: the last job is acked at its stop (a plain ack), the others
# by the ack and pop.
ids = ["report-1", "report-2", "report-3", "report-none", "report-big", "report-set"]
for job_id in ids:
    c.push(topic, job_id, job_id=job_id, ttr=30)
done: List[str] = []
lock = threading.Lock()


def handle(job: Job) -> Any:
    try:
        if job["id"] == "report-none":
            return None
        if job["id"] == "report-big":
            return "x" * 100  # over max_result
        if job["id"] == "report-set":
            return {1, 2}  # not JSON
        return {"url": "/r/%s.pdf" % job["id"], "pages": 7}
    finally:
        with lock:
            done.append(job["id"])
            if len(done) == len(ids):
                worker.stop()


log = logging.getLogger("outcomes")
log.propagate = False
warnings = Warnings()
log.addHandler(warnings)
worker = c.worker([topic], handle, poll=1, handle_signals=False, logger=log)
worker.run()
assert done == ids, done
for job_id in ids[:3]:
    completed(job_id, {"url": "/r/%s.pdf" % job_id, "pages": 7})
for job_id in ids[3:]:
    completed(job_id, None)
assert len(warnings.lines) == 2, warnings.lines
assert "report-big: its result is too big to keep" in warnings.lines[0], warnings.lines
assert "report-set: its result is not JSON" in warnings.lines[1], warnings.lines

# ack with a result, by id.
job = popped("ack-1")
c.ack(job["id"], job["attempt"], token=job["token"], result=[1, "two", None])
completed("ack-1", [1, "two", None])

# A result gmq cannot keep is a 413, the job still reserved; one that is
# not JSON is raised before any request.
job = popped("ack-2")
try:
    c.ack(job["id"], job["attempt"], token=job["token"], result="x" * 100)
    raise AssertionError("a result over max_result was taken")
except GmqError as e:
    assert e.status == 413, e
for bad, error in ((float("nan"), ValueError), (object(), TypeError)):
    try:
        c.ack(job["id"], job["attempt"], token=job["token"], result=bad)
        raise AssertionError("a result that is not JSON was sent: %r" % bad)
    except error:
        pass
assert c.get_job("ack-2")["state"] == "reserved"
assert c.ack_and_pop(job["id"], job["attempt"], [topic], token=job["token"], result=0) is None
completed("ack-2", 0)

# ack_many: each job's "result", when it has one.
c.push_batch([{"topic": topic, "body": "x", "id": "many-1"}, {"topic": topic, "body": "y", "id": "many-2"}])
jobs = c.pop_many([topic], 2, timeout=1)
assert [j["id"] for j in jobs] == ["many-1", "many-2"], jobs
answer = c.ack_many([dict(jobs[0], result="first"), jobs[1]])
assert sorted(answer["acked"]) == ["many-1", "many-2"] and not answer["failed"], answer
completed("many-1", "first")
completed("many-2", None)

# A push's keep_completed: kept where its topic keeps none, and not kept
# (0) where its topic keeps an hour; get_job shows a job's own.
c.push(topic + "-plain", "x", job_id="mine", keep_completed=600)
c.push_batch([{"topic": topic + "-plain", "body": "y", "id": "batch-mine", "keep_completed": 60}])
c.push(topic, "x", job_id="none", keep_completed=0)
assert c.get_job("mine")["keep_completed"] == 600 and c.get_job("batch-mine")["keep_completed"] == 60
assert "keep_completed" not in c.get_job("ack-1")
for t in (topic + "-plain", topic + "-plain", topic):
    job = c.pop([t], timeout=1)
    assert job is not None, t
    c.ack(job["id"], job["attempt"], token=job["token"], result="done")
completed("mine", "done")
completed("batch-mine", "done")
for gone in ("none", "no-such-job"):
    try:
        c.get_job(gone)
        raise AssertionError("%s was kept" % gone)
    except GmqError as e:
        assert e.status == 404, e
print("ok")
