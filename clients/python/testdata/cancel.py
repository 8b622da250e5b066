"""Progress, cancelling and waiting for the end through the installed
Python client: argv = base URL, topic.

A worker's handler whose job is cancelled is stopped (its stop event set)
when the worker's touch learns it (TTR 2 s: a touch a second), or when the
handler's own progress call does (GmqError 410); the job ends cancelled,
neither acked nor failed, and the worker logs it. A handler that finishes
anyway has its ack's 410 logged. progress reports a value and a log line,
which get_job shows; cancel ends a waiting job at once; wait_end is
answered when a worker acks the job with a result; push_and_wait brings
the result back in the push's request, or the id when none came in time.
Prints "ok"."""
import json
import logging
import sys
import threading
import time
import urllib.request
from typing import Any, Callable, Dict, List, Optional

from gmq_client import Client, GmqError, Job

url, topic = sys.argv[1], sys.argv[2]
c = Client(url)


def api(method: str, path: str, payload: Any = None) -> Any:
    """A call the client has no method for (a topic's config, the stats)."""
    data = json.dumps(payload).encode() if payload is not None else None
    req = urllib.request.Request(url + path, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as resp:
        return json.loads(resp.read().decode())


def eventually(what: str, ok: Callable[[], Any], within: float = 10.0) -> Any:
    """Wait for ok() to be true, polling; raise past within seconds."""
    deadline = time.monotonic() + within
    while True:
        got = ok()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError("not within %g s: %s" % (within, what))
        time.sleep(0.02)


class Lines(logging.Handler):
    """Keeps a worker's log lines, for the script to check."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def has(self, text: str) -> bool:
        return any(text in line for line in list(self.lines))


class Running:
    """A worker run()ning in a thread of its own, with its log."""

    def __init__(self, topics: List[str], handler: Any) -> None:
        self.lines = Lines()
        log = logging.getLogger("cancel-%s" % topics[0])
        log.propagate = False
        log.setLevel(logging.INFO)
        log.addHandler(self.lines)
        self.worker = c.worker(topics, handler, poll=1, handle_signals=False, logger=log)
        self.thread = threading.Thread(target=self.worker.run, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.worker.stop()
        self.thread.join(10)
        assert not self.thread.is_alive(), "the worker did not stop"


def cancelled(job_id: str) -> Job:
    """Require job_id ended cancelled (its topic keeps it), never failed."""
    job = eventually("%s cancelled" % job_id, lambda: (lambda j: j if j["state"] == "cancelled" else None)(c.get_job(job_id)))
    assert job["failures"] == 0 and job["cancelled_at"] and "result" not in job, job
    return job


def keeping(name: str) -> str:
    """A topic that keeps its ended jobs an hour."""
    api("PUT", "/api/v1/topics/%s/config" % name, {"keep_completed": 3600})
    return name


# A handler stopped by the worker's touch (TTR 2 s), and one stopped by its
# own progress call: each sees its stop event set, the job ends cancelled.
for how, ttr in (("touch", 2), ("progress", 60)):
    t = keeping("%s-%s" % (topic, how))
    job_id = "export-" + how
    c.push(t, "all orders", job_id=job_id, ttr=ttr)
    started = threading.Event()
    seen: Dict[str, Any] = {}

    def handle(job: Job, stop: threading.Event, how: str = how) -> None:
        started.set()
        try:
            step = 0
            while how == "progress" and not stop.is_set():
                step += 1
                c.progress(job["id"], job["attempt"], progress={"step": step}, log="step %d" % step,
                           token=job["token"])
                stop.wait(0.02)
            stop.wait(30)
        except GmqError as e:
            seen["error"] = e.status
            raise
        finally:
            seen["stopped"] = stop.is_set()

    running = Running([t], handle)
    assert started.wait(10), how
    if how == "progress":
        eventually("the first progress", lambda: "progress" in c.get_job(job_id))
    job = c.cancel(job_id)
    assert job["state"] == "reserved" and job["cancelling"] is True, job
    eventually("the handler stopped (%s)" % how, lambda: "stopped" in seen)
    assert seen["stopped"], seen
    assert how == "touch" or seen.get("error") == 410, seen
    job = cancelled(job_id)
    assert how == "touch" or job["log"][0]["line"] == "step 1", job
    eventually("the worker's log line", lambda: running.lines.has("its handler was stopped; neither acked nor failed"))
    running.stop()

# A handler that takes no stop event finishes after the cancel: its ack's
# 410 is logged, and the job stays cancelled, without the result.
t = keeping(topic + "-late")
c.push(t, "x", job_id="label-1", ttr=60)
started, finish = threading.Event(), threading.Event()


def late(job: Job) -> str:
    started.set()
    finish.wait(30)
    return "printed"


running = Running([t], late)
assert started.wait(10)
assert c.cancel("label-1")["cancelling"] is True
finish.set()
cancelled("label-1")
eventually("the ack's 410 logged", lambda: running.lines.has("cancelled while its handler ran: not acked"))
running.stop()

# progress and a log line, read back; another delivery's is a 409.
t = keeping(topic + "-progress")
c.push(t, "x", job_id="export-2", ttr=30)
job = c.pop([t], timeout=1)
assert job is not None
c.progress(job["id"], job["attempt"], progress={"rows": 4000, "of": 12000}, log="page 1 of 3", token=job["token"])
got = c.progress(job["id"], job["attempt"], log="page 2 of 3", token=job["token"])  # a line alone: the progress stays
assert got["progress"] == {"rows": 4000, "of": 12000}, got
assert [line["line"] for line in got["log"]] == ["page 1 of 3", "page 2 of 3"] and got["log"][0]["at"], got
try:
    c.progress(job["id"], job["attempt"] + 1, progress=1)
    raise AssertionError("another delivery's progress was taken")
except GmqError as e:
    assert e.status == 409, e
c.ack(job["id"], job["attempt"], token=job["token"])
assert len(c.get_job("export-2")["log"]) == 2

# cancel: a waiting job ends at once (kept, or removed); an ended one is a 409.
c.push(t, "x", job_id="waiting", delay=3600)
job = c.cancel("waiting")
assert job["state"] == "cancelled" and job["cancelled_at"], job
c.push(topic + "-plain", "x", job_id="plain")
assert c.cancel("plain") == {"id": "plain", "state": "cancelled"}
for job_id, status in (("waiting", 409), ("plain", 404)):
    try:
        c.cancel(job_id)
        raise AssertionError("%s cancelled again" % job_id)
    except GmqError as e:
        assert e.status == status, e

# wait_end: None when nothing ends in time; answered when a worker acks the
# job with a result; an unknown job is a 404.
t = keeping(topic + "-labels")
c.push(t, "x", job_id="label-2")
assert c.wait_end("label-2", timeout=0.2) is None
ended: Dict[str, Optional[Job]] = {}
waiter = threading.Thread(target=lambda: ended.update(end=c.wait_end("label-2", timeout=30)), daemon=True)
waiter.start()
eventually("the wait under way", lambda: api("GET", "/api/v1/stats")["current_end_waits"] == 1)
running = Running([t], lambda job: "printed")
waiter.join(20)
end = ended.get("end")
assert end is not None and end["state"] == "completed" and end["result"] == "printed", ended
running.stop()
try:
    c.wait_end("no-such-job")
    raise AssertionError("a wait for an unknown job was answered")
except GmqError as e:
    assert e.status == 404, e

# push_and_wait: the result in the push's own request; with no worker, the
# id after the wait.
t = keeping(topic + "-quotes")
running = Running([t], lambda job: {"price": 42, "for": job["body"]})
job_id, end = c.push_and_wait(t, "ada", wait=20)
assert end is not None and end["id"] == job_id and end["state"] == "completed", end
assert end["result"] == {"price": 42, "for": "ada"}, end
running.stop()
job_id, end = c.push_and_wait(t, "bob", wait=0.2, job_id="quote-2")
assert job_id == "quote-2" and end is None, (job_id, end)
assert c.get_job("quote-2")["state"] == "ready"
print("ok")
