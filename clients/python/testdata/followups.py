"""Follow-ups through the installed Python client: argv = base URL, topic.

An ack with push answers its follow-ups' ids (ack by id; ack_many's
"pushed"), and each is then popped under its id; without push, ack still
returns None. A bad follow-up (an id of its own, no topic) is GmqError 400
naming it, and the job stays reserved. A worker's handler that returns
Done acks its job with the result and follow-ups, which the worker then
works; one whose follow-ups gmq refuses is failed with gmq's reason.
Prints "ok"."""
import logging
import sys
import threading
from typing import Any, List

from gmq_client import Client, Done, GmqError, Job

url, topic = sys.argv[1], sys.argv[2]
mails = topic + "-mails"
c = Client(url)


def popped(job_id: str) -> Job:
    """Push job_id to the topic and pop it."""
    c.push(topic, job_id, job_id=job_id, ttr=30)
    job = c.pop([topic], timeout=1)
    assert job is not None and job["id"] == job_id, job
    return job


def pop_as(job_id: str, body: Any) -> Job:
    """Pop from mails and require job_id with body."""
    job = c.pop([mails], timeout=5)
    assert job is not None and job["id"] == job_id and job["body"] == body, (job, job_id, body)
    return job


def gone(job_id: str) -> bool:
    try:
        c.get_job(job_id)
        return False
    except GmqError as e:
        assert e.status == 404, e
        return True


def completed(job_id: str, result: Any) -> bool:
    """An ack with a result keeps its job, completed with it (keep_results)."""
    job = c.get_job(job_id)
    return job["state"] == "completed" and job.get("result") == result


# ack with follow-ups: their ids, in push's order; the acked job is kept
# with its result (keep_results).
job = popped("order-77")
ids = c.ack(job["id"], job["attempt"], token=job["token"], result={"shipped": True},
            push=[{"topic": mails, "body": {"order": 77}, "priority": 1},
                  {"topic": mails, "body": "invoice 77", "priority": 5}])
assert isinstance(ids, list) and len(ids) == 2 and ids[0] != ids[1], ids
assert completed("order-77", {"shipped": True}), c.get_job("order-77")
pop_as(ids[0], {"order": 77})
pop_as(ids[1], "invoice 77")

# A plain ack still returns None.
job = popped("order-plain")
assert c.ack(job["id"], job["attempt"], token=job["token"]) is None

# A bad follow-up: GmqError 400 naming it (its index, 1), the job still reserved.
job = popped("order-bad")
for bad in ({"topic": mails, "body": "x", "id": "mine"}, {"body": "no topic"}):
    try:
        c.ack(job["id"], job["attempt"], token=job["token"], push=[{"topic": mails, "body": "fine"}, bad])
        raise AssertionError("a bad follow-up was taken: %r" % bad)
    except GmqError as e:
        assert e.status == 400 and "push: job 1:" in e.message, e
    assert c.get_job("order-bad")["state"] == "reserved"
assert c.ack(job["id"], job["attempt"], token=job["token"], push=[]) == []  # an empty push: a plain ack
assert gone("order-bad") and c.pop([mails], timeout=0.2) is None

# ack_many: each job's "push"; the answer's "pushed" by acked id.
c.push_batch([{"topic": topic, "body": "x", "id": "many-1"}, {"topic": topic, "body": "y", "id": "many-2"}])
jobs = c.pop_many([topic], 2, timeout=1)
assert [j["id"] for j in jobs] == ["many-1", "many-2"], jobs
answer = c.ack_many([dict(jobs[0], push=[{"topic": mails, "body": "after many-1"}]), jobs[1]])
assert sorted(answer["acked"]) == ["many-1", "many-2"] and not answer["failed"], answer
assert list(answer["pushed"]) == ["many-1"] and len(answer["pushed"]["many-1"]) == 1, answer
pop_as(answer["pushed"]["many-1"][0], "after many-1")


class Warnings(logging.Handler):
    """Keeps the worker's warnings, for the script to check (its output is "ok" alone)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


# The worker: an order ends with a mail (Done), which the worker works too;
# the bad order's follow-up (an id of its own) is refused: it is failed,
# and dies (max_attempts 1).
c.push(topic, "1", job_id="w-order-1", ttr=30)
c.push(topic, "bad", job_id="w-order-bad", ttr=30, retry={"max_attempts": 1})
handled: List[str] = []
lock = threading.Lock()


def handle(job: Job) -> Any:
    with lock:
        handled.append("%s:%s" % (job["topic"], job["body"]))
        if len(handled) == 3:
            worker.stop()
    if job["body"] == "bad":
        return Done(push=[{"topic": mails, "body": "never", "id": "own-id"}])
    if job["topic"] == topic:
        return Done(result="shipped", push=[{"topic": mails, "body": "mail for " + job["body"]}])
    return None


log = logging.getLogger("followups")
log.propagate = False
warnings = Warnings()
log.addHandler(warnings)
worker = c.worker([topic, mails], handle, poll=1, handle_signals=False, logger=log)
runner = threading.Thread(target=worker.run)
runner.start()
runner.join(20)
assert not runner.is_alive(), handled
assert sorted(handled) == [mails + ":mail for 1", topic + ":1", topic + ":bad"], handled
assert completed("w-order-1", "shipped"), c.get_job("w-order-1")
bad = c.get_job("w-order-bad")
assert bad["state"] == "dead" and "400" in bad["last_error"] and "id" in bad["last_error"], bad
assert len(warnings.lines) == 1 and "w-order-bad: its follow-ups were refused" in warnings.lines[0], warnings.lines
assert c.pop([mails], timeout=0.2) is None
print("ok")
