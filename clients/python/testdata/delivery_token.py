"""Delivery tokens through the installed Python client: argv = base URL, topic.

A popped job's client id is pushed again while its first delivery is still
held (as after Redis lost its data, when the producer pushes its job again):
the calls that carry the lost delivery's token reach nothing (404), and the
new job stays with its consumer. Without the token, an ack reaches it."""
import logging
import sys
import threading

from gmq_client import Client, GmqError, Job, Worker

c = Client(sys.argv[1])
topic = sys.argv[2]


def lost(job_id: str) -> "tuple[Job, Job]":
    """Pop job_id (in a topic of its own), lose it, push it again and pop
    the new one: both at attempt 1."""
    def pop() -> Job:
        c.push(job_id, "x", job_id=job_id, ttr=30)
        job = c.pop([job_id], timeout=1)
        assert job is not None and job["id"] == job_id and job["attempt"] == 1 and job.get("token"), job
        return job
    old = pop()
    c._send("DELETE", "/api/v1/jobs/" + job_id, None)  # lost
    return old, pop()


def reserved(job_id: str) -> None:
    assert c._send("GET", "/api/v1/jobs/" + job_id, None)["state"] == "reserved", job_id


calls = {
    "ack": lambda j: c.ack(j["id"], j["attempt"], token=j["token"]),
    "ack_and_pop": lambda j: c.ack_and_pop(j["id"], j["attempt"], ["none"], token=j["token"]),
    "touch": lambda j: c.touch(j["id"], j["attempt"], token=j["token"]),
    "release": lambda j: c.release(j["id"], j["attempt"], token=j["token"]),
    "bury": lambda j: c.bury(j["id"], j["attempt"], token=j["token"]),
    "fail": lambda j: c.fail(j["id"], j["attempt"], "late", token=j["token"]),
}
for name, call in calls.items():
    old, new = lost("tok-" + name)
    try:
        call(old)
        raise AssertionError("%s of a lost delivery went through" % name)
    except GmqError as e:
        assert e.status == 404, (name, e)
    reserved(new["id"])
    call(new)

old, new = lost("tok-many")
answer = c.ack_many([old])
assert not answer["acked"] and answer["failed"][0]["status"] == 404, answer
answer = c.fail_many([old], "late")
assert not answer["jobs"] and answer["failed"][0]["status"] == 404, answer
reserved(new["id"])
# The hazard the token closes: by id and attempt alone the late ack reaches the new job.
c.ack(old["id"], old["attempt"])
try:
    c._send("GET", "/api/v1/jobs/tok-many", None)
    raise AssertionError("the new tok-many survived an ack without token")
except GmqError as e:
    assert e.status == 404, e

# The worker's ack carries the token: its job is lost while the handler runs.
c.push(topic, "old", job_id="order-42", ttr=30)
newer: "list[Job]" = []
other = Client(sys.argv[1])


def handler(job: Job) -> None:
    assert job.get("token"), job
    c._send("DELETE", "/api/v1/jobs/order-42", None)
    other.push(topic, "new", job_id="order-42", ttr=30)
    got = other.pop([topic], timeout=1)
    assert got is not None and got["attempt"] == 1 and got["token"] != job["token"], got
    newer.append(got)
    worker.stop()


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: "list[str]" = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


log = logging.getLogger("token-test")
lines = Lines()
log.addHandler(lines)
worker = Worker(c, [topic], handler, poll=0.1, handle_signals=False, logger=log)
thread = threading.Thread(target=worker.run)
thread.start()
thread.join(20)
assert not thread.is_alive(), "the worker did not stop"
assert any("order-42" in line and "404" in line for line in lines.lines), lines.lines
reserved("order-42")
assert c._send("GET", "/api/v1/jobs/order-42", None)["body"] == "new"
other.ack(newer[0]["id"], newer[0]["attempt"], token=newer[0]["token"])
print("ok")
