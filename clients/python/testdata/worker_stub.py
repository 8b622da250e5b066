"""The worker against a stub of the broker (stub.py), for what a live
broker cannot show on cue. Prints "ok"."""
import logging
import threading
from typing import List

from gmq_client import Client, GmqError, Job
from stub import Reply, Stub

JOB = {"id": "j1", "topic": "t", "body": "x", "attempt": 1, "TTR": 60}


class Logged(logging.Handler):
    """Keeps the worker's log lines, to check (and not print: the test wants "ok" only)."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


LOG = Logged()
logging.getLogger("gmq_client").addHandler(LOG)
logging.getLogger("gmq_client").setLevel(logging.INFO)
logging.getLogger("gmq_client").propagate = False


def stop_during_a_poll() -> None:
    """A job that a poll in flight brings after stop() is released at
    once, not run, and run() returns."""
    stub = Stub()
    polling, answer = threading.Event(), threading.Event()

    def held_pop() -> Reply:
        polling.set()
        answer.wait(10)
        return 200, JOB, {}

    stub.answers = [held_pop, (200, dict(JOB, state="ready"), {})]
    ran: List[Job] = []
    worker = Client(stub.url).worker(["t"], ran.append, poll=5, handle_signals=False)
    thread = threading.Thread(target=worker.run)
    thread.start()
    assert polling.wait(10), "the worker never polled"
    worker.stop()
    answer.set()
    thread.join(10)
    assert not thread.is_alive(), "run() did not return"
    assert ran == [], ran
    paths = [r["path"] for r in stub.requests]
    assert paths == ["/api/v1/pop", "/api/v1/jobs/j1/release"], paths
    assert stub.requests[1]["body"]["attempt"] == 1, stub.requests
    assert any("releasing j1" in line for line in LOG.lines), LOG.lines
    stub.shutdown()


def wrong_token() -> None:
    """A pop that no retry mends (401) stops the worker: run() raises it."""
    stub = Stub()
    stub.answers = [(401, {"error": "this gmq requires a token"}, {})]
    worker = Client(stub.url, token="wrong").worker(["t"], lambda job: None, concurrency=2, handle_signals=False)
    stub.answers.append(stub.answers[0])  # one for each thread's first pop
    try:
        worker.run()
    except GmqError as e:
        assert e.status == 401, e
    else:
        raise AssertionError("run() returned")
    assert worker.stopping
    assert any("stopping: gmq: 401" in line for line in LOG.lines), LOG.lines
    stub.shutdown()


stop_during_a_poll()
wrong_token()
print("ok")
