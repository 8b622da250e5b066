"""Workflows through the installed Python client: argv = base URL, topic.

Dependencies: a job pushed with after waits ("waiting") until its
dependencies are acked, then is popped, their results kept
(dependency_results); push_batch takes after too; an unknown dependency is
a 400, a dead one a 409 (on_dependency_failure "run" takes it as done).
A job's own follow-ups: its then popped after its ack (with_result: its
result in the body), its on_dead after it dies (max_attempts 1), each under
the id its view named; a bad one is a 400. Batches: on_complete with
with_result comes once with the summary (state done, completed count,
meta), get_batch shows it done; on_death comes at a death, on_success not
when one died; an open batch takes add_to_batch until close_batch;
cancel_batch cancels it; 404s and 409s. Prints "ok"."""
import sys
from typing import Any, Callable

from gmq_client import Client, CreatedBatch, GmqError, Job

url, topic = sys.argv[1], sys.argv[2]
c = Client(url)
CALLBACK_WAIT = 10  # seconds: a dependency's end, a follow-up or a callback comes within ~2 s


def pop_one(name: str, timeout: float = CALLBACK_WAIT) -> Job:
    job = c.pop([name], timeout=timeout)
    assert job is not None, "nothing popped from %s" % name
    return job


def none_in(name: str, timeout: float = 0.2) -> None:
    job = c.pop([name], timeout=timeout)
    assert job is None, (name, job)


def refused(status: int, says: str, call: Callable[[], Any]) -> None:
    """Require call to raise GmqError status, its message saying says."""
    try:
        got = call()
    except GmqError as e:
        assert e.status == status and says in e.message, (e, status, says)
        return
    raise AssertionError("not refused (%d %s): %r" % (status, says, got))


def acked(name: str, result: Any = None) -> Job:
    """Pop a job from name and ack it with result."""
    job = pop_one(name, 1)
    c.ack(job["id"], job["attempt"], token=job["token"], result=result)
    return job


def died(name: str) -> Job:
    """Pop a job from name (max_attempts 1) and fail it: dead."""
    job = pop_one(name, 1)
    assert c.fail(job["id"], job["attempt"], "boom", token=job["token"])["state"] == "dead"
    return job


# --- Dependencies -----------------------------------------------------------
extract, clean, load = topic + "-extract", topic + "-clean", topic + "-load"
c.push(extract, "x", job_id="extract-1", ttr=30)
c.push(clean, "c", job_id="clean-1", ttr=30)
assert c.push(load, "y", job_id="load-1", ttr=30, after=["extract-1", "clean-1"], with_results=True) == "load-1"
view = c.get_job("load-1")
assert view["state"] == "waiting" and len(view["after"]) == 2 and len(view["waiting_for"]) == 2, view
none_in(load)
acked(extract, {"rows": 3})
none_in(load)
acked(clean)
job = pop_one(load)
assert job["id"] == "load-1" and job["body"] == "y", job
results = c.get_job("load-1")["dependency_results"]
assert sorted(results.values(), key=repr) == [None, {"rows": 3}] and set(results) == set(view["after"]), results
c.ack(job["id"], job["attempt"], token=job["token"])

# push_batch passes after through; an unknown dependency is a 400.
c.push(extract, "x2", job_id="extract-2", ttr=30)
ids = c.push_batch([{"topic": load, "body": "z", "id": "load-2", "after": ["extract-2"],
                     "on_dependency_failure": "run"}])
assert ids == ["load-2"] and c.get_job("load-2")["state"] == "waiting", ids
refused(400, "after: job ", lambda: c.push(load, "z", after=["no-such-job"]))
try:
    c.push(load, "z", after="extract-2")  # a str is a Sequence[str]: refused at run time
    raise AssertionError("a string was taken as after")
except TypeError:
    pass

# A dead dependency: 409 (the message the client's retry reads), unless
# on_dependency_failure is "run", which counts it as done.
c.push(extract, "doomed", job_id="doomed-1", ttr=30, retry={"max_attempts": 1})
acked(extract)  # extract-2: load-2 is released
assert pop_one(load)["id"] == "load-2"
died(extract)
refused(409, "after: job ", lambda: c.push(load, "z", after=["doomed-1"]))
c.push(load, "anyway", job_id="load-3", after=["doomed-1"], on_dependency_failure="run")
assert pop_one(load)["id"] == "load-3"

# --- then and on_dead -------------------------------------------------------
images, thumbs, alerts = topic + "-images", topic + "-thumbs", topic + "-alerts"
c.push(images, {"img": 9}, job_id="resize-9", ttr=30,
       then=[{"topic": thumbs, "body": {"img": 9}, "with_result": True}],
       on_dead=[{"topic": alerts, "body": "img 9 failed"}])
view = c.get_job("resize-9")
assert len(view["then"]) == 1 and len(view["on_dead"]) == 1, view
acked(images, {"width": 100})
job = pop_one(thumbs)
assert job["id"] == view["then"][0] and job["body"] == {"body": {"img": 9}, "result": {"width": 100}}, (job, view)
none_in(alerts)

c.push(images, "crash", job_id="crash-1", ttr=30, retry={"max_attempts": 1},
       then=[{"topic": thumbs, "body": "never"}], on_dead=[{"topic": alerts, "body": "crash-1 died"}])
view = c.get_job("crash-1")
died(images)
job = pop_one(alerts)
assert job["id"] == view["on_dead"][0] and job["body"] == "crash-1 died", (job, view)
none_in(thumbs)
refused(400, "then: job 0", lambda: c.push(images, "x", then=[{"topic": thumbs, "body": "x", "id": "mine"}]))

# --- Batches ----------------------------------------------------------------
parts, done = topic + "-parts", topic + "-done"
created = c.create_batch([{"topic": parts, "body": "1", "ttr": 30}, {"topic": parts, "body": "2", "ttr": 30}],
                         on_complete={"topic": done, "body": "report", "with_result": True},
                         meta={"report": 42}, with_results=True)
assert isinstance(created, CreatedBatch) and created.id and len(created.ids) == 2, created
batch_id, ids = created
batch = c.get_batch(batch_id)
assert batch["id"] == batch_id and batch["state"] == "closed" and batch["total"] == 2 and batch["pending"] == 2, batch
assert batch["meta"] == {"report": 42} and set(batch["callbacks"]) == {"on_complete"}, batch
for want, result in zip(ids, ({"pages": 3}, {"pages": 5})):
    job = pop_one(parts, 1)
    assert job["id"] == want and job["batch"] == batch_id, (job, want)
    c.ack(job["id"], job["attempt"], token=job["token"], result=result)
job = pop_one(done)
assert job["id"] == batch["callbacks"]["on_complete"], (job, batch)
body: Any = job["body"]
summary = body["result"]
assert body["body"] == "report" and summary["batch"] == batch_id and summary["state"] == "done", job
assert summary["total"] == 2 and summary["completed"] == 2 and summary["dead"] == 0, summary
assert summary["meta"] == {"report": 42} and sorted(summary["results"].values(), key=repr) == [
    {"pages": 3}, {"pages": 5}], summary
c.ack(job["id"], job["attempt"], token=job["token"])
none_in(done, 1.5)  # once
batch = c.get_batch(batch_id)
assert batch["state"] == "done" and batch["completed"] == 2 and batch["pending"] == 0 and batch["finished_at"], batch
refused(409, "is done", lambda: c.cancel_batch(batch_id))
refused(409, "is done", lambda: c.add_to_batch(batch_id, [{"topic": parts, "body": "late"}]))

# A death: on_death at once, on_complete at the end, on_success never.
batch_id, ids = c.create_batch([{"topic": parts, "body": "ok", "ttr": 30},
                                {"topic": parts, "body": "bad", "ttr": 30, "retry": {"max_attempts": 1}}],
                               on_complete={"topic": done, "body": "complete"},
                               on_success={"topic": done, "body": "success"},
                               on_death={"topic": done, "body": "death", "with_result": True})
acked(parts)
died(parts)
bodies = []
for _ in range(2):
    job = pop_one(done)
    bodies.append(job["body"])
    c.ack(job["id"], job["attempt"], token=job["token"])
death = next(b for b in bodies if isinstance(b, dict))
assert death["body"] == "death" and death["result"]["dead"] == 1, bodies
assert "complete" in bodies and "success" not in bodies, bodies
none_in(done, 1.5)
batch = c.get_batch(batch_id)
assert batch["state"] == "done" and batch["dead"] == 1 and list(batch["dead_jobs"]) == [ids[1]], batch

# An open batch: added to, closed, cancelled.
later = topic + "-later"
open_id, none = c.create_batch([], open=True)
assert none == [] and c.get_batch(open_id)["state"] == "open"
added = c.add_to_batch(open_id, [{"topic": later, "body": "x", "delay": 3600}])
assert len(added) == 1 and c.get_job(added[0])["batch"] == open_id, added
batch = c.close_batch(open_id)
assert batch["state"] == "closed" and batch["total"] == 1 and batch["pending"] == 1, batch
assert c.close_batch(open_id)["state"] == "closed"  # again: nothing changes
assert c.cancel_batch(open_id) == 1
assert c.get_batch(open_id)["state"] == "cancelled"
assert c.cancel_batch(open_id) == 0  # again
refused(409, "is cancelled", lambda: c.add_to_batch(open_id, [{"topic": later, "body": "y"}]))
refused(409, "is cancelled", lambda: c.close_batch(open_id))

# Unknown batches, and a bad one.
refused(404, "not found", lambda: c.get_batch("12345"))
refused(404, "not found", lambda: c.cancel_batch("no-such-batch"))
refused(404, "not found", lambda: c.add_to_batch("12345", [{"topic": later, "body": "y"}]))
refused(400, "topic is missing", lambda: c.create_batch([{"body": "no topic"}]))
waits = {"topic": done, "body": "x", "after": ["load-1"]}  # a callback waits for no job
refused(400, "waits for no job", lambda: c.create_batch([], on_complete=waits))
print("ok")
