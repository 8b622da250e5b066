"""Retries on 503, against a stub of the broker (stub.py, no broker): each
case scripts the stub's answers, makes one call and checks its result, its
requests and how long it took. Prints "ok"."""
import time
from typing import Any, Callable, Dict

from gmq_client import Client, GmqError
from stub import DOWN, NOW, Stub


def raises(status: int) -> Callable[[Client], Any]:
    """A call expected to raise GmqError with status, returned as its result."""
    def call(c: Client) -> Any:
        try:
            c.push("t", "x")
        except GmqError as e:
            return ("raised", e.status)
        return "returned"
    return call


def batch_raises(c: Client) -> Any:
    try:
        c.push_batch([{"topic": "t", "body": "1"}, {"topic": "t", "body": "2"}])
    except GmqError as e:
        return ("raised", e.status, e.body.get("stored_ids"))
    return "returned"


def unique_push(job_id: Any) -> Callable[[Client], Any]:
    """A unique push (with job_id, or None), and what came of it: gmq's
    answer, or the GmqError's status and held_by."""
    def call(c: Client) -> Any:
        try:
            return c.push("t", "x", job_id=job_id, unique={"key": "k", "for": 60})
        except GmqError as e:
            return ("raised", e.status, e.held_by)
    return call


def status_of(call: Callable[[Client], Any]) -> Callable[[Client], Any]:
    """call, and the status of the GmqError it raised (None if none)."""
    def run(c: Client) -> Any:
        try:
            call(c)
        except GmqError as e:
            return ("raised", e.status)
        return None
    return run


def held(by: str) -> Dict[str, Any]:
    """A unique push's 409: its key is held by job by."""
    return {"error": "unique key \"k\" of topic \"t\" is held by job " + by, "id": by, "internal_id": 7}


JOB = {"id": "j2", "topic": "t", "body": "next", "attempt": 1, "TTR": 60}
# HANG bounds a case that waits for nothing (a Retry-After of 0, or no
# retry): only a hang, since a wrong wait there (one default backoff, 0.1 s)
# is within what a loaded machine adds. It was 0.5 s, and a make test beside
# other load once took 0.5005 s. The cases that wait check their waits from
# below, and the cap on the backoff from above.
HANG = 2.0
# name, client options, answers, call, result, the requests (sent), (least, most) seconds taken
CASES = [
    ("a 503 is retried after its Retry-After, past max_backoff", {"max_backoff": 0.2},
     [(503, DOWN, {"Retry-After": "1"}), (201, {"id": "7"}, {})],
     lambda c: c.push("t", "x"), "7", ["/api/v1/jobs"] * 2, (1.0, 1.5)),
    ("a retried push with an id that gets 409 was stored", {}, [(503, DOWN, NOW), (409, {"error": "duplicate"}, {})],
     lambda c: c.push("t", "x", job_id="order-1"), "order-1", ["/api/v1/jobs"] * 2, (0, HANG)),
    ("a retried unique push with an id whose 409 is the id's was stored", {},
     [(503, DOWN, NOW), (409, {"error": "duplicate"}, {})],
     unique_push("order-1"), {"id": "order-1"}, ["/api/v1/jobs"] * 2, (0, HANG)),
    ("a retried unique push with an id whose key it holds itself was stored", {},
     [(503, DOWN, NOW), (409, held("order-1"), {})],
     unique_push("order-1"), {"id": "order-1"}, ["/api/v1/jobs"] * 2, (0, HANG)),
    ("a retried unique push with an id whose key another job holds is raised", {},
     [(503, DOWN, NOW), (409, held("theirs"), {})],
     unique_push("order-1"), ("raised", 409, "theirs"), ["/api/v1/jobs"] * 2, (0, HANG)),
    ("a retried unique push without an id whose key is held is raised, naming the holder", {},
     [(503, DOWN, NOW), (409, held("7"), {})],
     unique_push(None), ("raised", 409, "7"), ["/api/v1/jobs"] * 2, (0, HANG)),
    ("a first try's 409 is raised", {}, [(409, {"error": "duplicate"}, {})],
     raises(409), ("raised", 409), ["/api/v1/jobs"], (0, HANG)),
    ("a retried ack that gets 404 was acked", {}, [(503, DOWN, NOW), (404, {"error": "no such job"}, {})],
     lambda c: c.ack("j1", 1), None, ["/api/v1/jobs/j1/ack"] * 2, (0, HANG)),
    ("a retried delete_schedule that gets 404 was deleted", {}, [(503, DOWN, NOW), (404, {"error": "not found"}, {})],
     status_of(lambda c: c.delete_schedule("a b")), None, ["/api/v1/schedules/a%20b"] * 2, (0, HANG)),
    ("a first try's 404 to delete_schedule is raised", {}, [(404, {"error": "not found"}, {})],
     status_of(lambda c: c.delete_schedule("s")), ("raised", 404), ["/api/v1/schedules/s"], (0, HANG)),
    ("a retried release_unique that gets 404 was released", {}, [(503, DOWN, NOW), (404, {"error": "not found"}, {})],
     status_of(lambda c: c.release_unique("t", "k/1")), None, ["/api/v1/topics/t/unique/k%2F1"] * 2, (0, HANG)),
    ("a fire is not taken as done: a retry's 409 is raised", {},
     [(503, DOWN, NOW), (409, {"error": "overlap skip"}, {})],
     status_of(lambda c: c.fire_schedule("s")), ("raised", 409), ["/api/v1/schedules/s/fire"] * 2, (0, HANG)),
    ("retries run out", {"retries": 2}, [(503, DOWN, NOW)] * 3,
     raises(503), ("raised", 503), ["/api/v1/jobs"] * 3, (0, HANG)),
    ("no retries", {"retries": 0}, [(503, DOWN, NOW)],
     raises(503), ("raised", 503), ["/api/v1/jobs"], (0, HANG)),
    ("without Retry-After the backoff doubles from 0.1 s, capped", {"max_backoff": 0.15},
     [(503, DOWN, {}), (503, DOWN, {}), (503, DOWN, {}), (204, None, {})],
     lambda c: c.pop(["t"], timeout=0), None, ["/api/v1/pop"] * 4, (0.4, 0.7)),
    ("an ack that went through is not sent again: only its pop is", {},
     [(503, dict(DOWN, acked="j1"), NOW), (200, JOB, {})],
     lambda c: c.ack_and_pop("j1", 1, ["t"], timeout=0), JOB, ["/api/v1/jobs/j1/ack", "/api/v1/pop"], (0, HANG)),
    ("a batch stored in part is retried without its stored jobs", {},
     [(503, dict(DOWN, stored_ids=["a"]), NOW), (201, {"ids": ["b", "c"]}, {})],
     lambda c: c.push_batch([{"topic": "t", "body": s, "id": s} for s in "abc"]), ["a", "b", "c"],
     ["/api/v1/jobs/batch a,b,c", "/api/v1/jobs/batch b,c"], (0, HANG)),
    ("a batch without ids stored in part is not retried", {}, [(503, dict(DOWN, stored_ids=["5"]), NOW)],
     batch_raises, ("raised", 503, ["5"]), ["/api/v1/jobs/batch 1,2"], (0, HANG)),
    ("a retried push with an id whose 409 is for a dead dependency is raised", {},
     [(503, DOWN, NOW), (409, {"error": "conflict: after: job 5 is dead, so this job would be cancelled at once"}, {})],
     status_of(lambda c: c.push("t", "x", job_id="load-1", after=["5"])), ("raised", 409), ["/api/v1/jobs"] * 2,
     (0, HANG)),
    ("a batch's create whose 503 names no batch is retried", {},
     [(503, DOWN, NOW), (201, {"id": "9", "ids": ["10", "11"]}, {})],
     lambda c: tuple(c.create_batch([{"topic": "t", "body": "1"}, {"topic": "t", "body": "2"}])),
     ("9", ["10", "11"]), ["/api/v1/batches"] * 2, (0, HANG)),
    ("a batch's create whose 503 names the batch it made and cancelled is raised", {},
     [(503, dict(DOWN, batch="9"), NOW)],
     status_of(lambda c: c.create_batch([{"topic": "t", "body": "1"}])), ("raised", 503), ["/api/v1/batches"],
     (0, HANG)),
    ("an add to a batch is not retried", {}, [(503, DOWN, NOW)],
     status_of(lambda c: c.add_to_batch("9", [{"topic": "t", "body": "1"}])), ("raised", 503),
     ["/api/v1/batches/9/jobs"], (0, HANG)),
    ("a batch's cancel and close are retried", {},
     [(503, DOWN, NOW), (200, {"cancelled": 0}, {}), (503, DOWN, NOW), (200, {"id": "9", "state": "cancelled"}, {})],
     lambda c: (c.cancel_batch("9"), c.close_batch("9")["state"]), (0, "cancelled"),
     ["/api/v1/batches/9"] * 2 + ["/api/v1/batches/9/close"] * 2, (0, HANG)),
    ("other errors are not retried", {}, [(400, {"error": "bad"}, NOW)],
     raises(400), ("raised", 400), ["/api/v1/jobs"], (0, HANG)),
]


def sent(request: Dict[str, Any]) -> str:
    """A request as CASES list it: its path, and a batch's ids (or bodies)."""
    jobs = request["body"].get("jobs")
    if request["path"] != "/api/v1/jobs/batch":
        return request["path"]
    return request["path"] + " " + ",".join(j.get("id") or j["body"] for j in jobs)


def main() -> None:
    stub = Stub()
    for name, options, answers, call, want, paths, (least, most) in CASES:
        stub.answers, stub.requests = list(answers), []
        start = time.monotonic()
        got = call(Client(stub.url, token="s3cret", **options))
        took = time.monotonic() - start
        assert got == want, (name, got, want)
        assert [sent(r) for r in stub.requests] == paths, (name, stub.requests)
        assert all(r["auth"] == "Bearer s3cret" for r in stub.requests), (name, stub.requests)
        assert least <= took <= most, (name, "took", took)
        assert not stub.answers, (name, "answers left", stub.answers)
    stub.shutdown()
    print("ok")


if __name__ == "__main__":
    main()
