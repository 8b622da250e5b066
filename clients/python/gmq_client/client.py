"""The HTTP client: one method per call of gmq's API (/api/v1), over urllib.

Every request carries the token when one is given, allows its long poll's
wait plus the client's timeout, and is retried on 503 (see Client).
"""
import json
import logging
import time
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Set, cast, overload

from gmq_client._wire import (SETTLED, can_skip, checked_result, delivery, job_path, loads, mark_undecodable, merge_ids,
                              push_fields, seconds, stored_as, workflow_fields)
from gmq_client.batches import BatchCalls
from gmq_client.events import EventCalls
from gmq_client.outcomes import OutcomeCalls
from gmq_client.schedules import ScheduleCalls
from gmq_client.shapes import Body, GmqError, Job, Pushed

if TYPE_CHECKING:  # the worker imports this module, so only type checkers import it here
    from gmq_client.worker import Handler, Worker

__all__ = ["Body", "Client", "GmqError", "Job", "Pushed"]

VERSION = "0.1.0"

# FIRST_BACKOFF is the wait before the first retry of a 503; each further
# retry waits twice as long, up to the client's max_backoff (as the Go client).
FIRST_BACKOFF = 0.1

# MAX_ERROR is how much of a failure's text fail sends: a job keeps its last
# error in Redis, so a huge exception message should not grow every job.
MAX_ERROR = 4096


class Client(ScheduleCalls, OutcomeCalls, EventCalls, BatchCalls):
    """A client of one broker's HTTP API. It is safe to share between
    threads: each call is a request of its own. Its calls of cron schedules
    (set_schedule, fire_schedule...) and release_unique are ScheduleCalls';
    events (a generator of the topics' events) is EventCalls'; batches
    (create_batch, get_batch...) are BatchCalls'.

    token is the broker's [web] token, sent as "Authorization: Bearer" on
    every request (without it such a broker answers 401). timeout bounds a
    request, and a waiting call (a pop, an ack that pops the next) allows
    its wait on top, so a long poll is never cut short by the client.

    A 503 (Redis down or slow: the broker asks for a retry in Retry-After
    seconds) is retried up to retries times, each after a backoff of 0.1 s,
    0.2 s, 0.4 s... capped by max_backoff, or after the answer's
    Retry-After when that is longer (the broker sends 1). A 503 promises
    nothing either way, so a retry may find that the earlier try went
    through after all; the calls that can tell take it as done:
    a push with a job_id that gets 409 (the id exists) returns the id as
    stored, and an ack that gets 404 (the job is gone) returns as acked.
    A push without a job_id cannot tell, so its retry may store the job
    twice: give an id to push exactly once (a unique push: see push).
    The batch calls say what a retry of each does (see create_batch).
    Network errors (OSError, urllib.error.URLError) are raised, not retried.
    """

    def __init__(self, base_url: str = "http://127.0.0.1:8000", timeout: float = 10.0,
                 token: Optional[str] = None, retries: int = 3, max_backoff: float = 5.0) -> None:
        if retries < 0 or max_backoff < 0 or timeout <= 0:
            raise ValueError("gmq: retries and max_backoff must be >= 0, timeout > 0")
        self.base = base_url.rstrip("/")
        self.timeout = timeout  # added to a long poll's own wait
        self.token = token
        self.retries = retries
        self.max_backoff = max_backoff
        self._init_outcomes()

    @overload
    def push(self, topic: str, body: Body, delay: float = 0, ttr: Optional[float] = None,
             priority: Optional[int] = None, job_id: Optional[str] = None,
             retry: Optional[Mapping[str, Any]] = None, *, unique: None = None,
             group: Optional[str] = None, keep_completed: Optional[float] = None,
             timeout: Optional[float] = None, after: Optional[Sequence[str]] = None,
             on_dependency_failure: Optional[str] = None, with_results: bool = False,
             then: Optional[Sequence[Mapping[str, Any]]] = None,
             on_dead: Optional[Sequence[Mapping[str, Any]]] = None) -> str: ...

    @overload
    def push(self, topic: str, body: Body, delay: float = 0, ttr: Optional[float] = None,
             priority: Optional[int] = None, job_id: Optional[str] = None,
             retry: Optional[Mapping[str, Any]] = None, *, unique: Mapping[str, Any],
             group: Optional[str] = None, keep_completed: Optional[float] = None,
             timeout: Optional[float] = None, after: Optional[Sequence[str]] = None,
             on_dependency_failure: Optional[str] = None, with_results: bool = False,
             then: Optional[Sequence[Mapping[str, Any]]] = None,
             on_dead: Optional[Sequence[Mapping[str, Any]]] = None) -> Pushed: ...

    def push(self, topic: str, body: Body, delay: float = 0, ttr: Optional[float] = None,
             priority: Optional[int] = None, job_id: Optional[str] = None,
             retry: Optional[Mapping[str, Any]] = None, *, unique: Optional[Mapping[str, Any]] = None,
             group: Optional[str] = None, keep_completed: Optional[float] = None,
             timeout: Optional[float] = None, after: Optional[Sequence[str]] = None,
             on_dependency_failure: Optional[str] = None, with_results: bool = False,
             then: Optional[Sequence[Mapping[str, Any]]] = None,
             on_dead: Optional[Sequence[Mapping[str, Any]]] = None) -> Any:
        """Store a job; returns its id. body is a string, or a dict or list,
        sent as a JSON object or array: a popped job gives it back as it came
        (a string stays a string, even one whose text is JSON). retry is the
        job's own retry policy ({"max_attempts", "backoff", "base", "max",
        "jitter"}), else its topic's.
        A job_id makes retries safe (see Client); a live job with the same id
        makes the first try fail with 409.

        group is the job's fair group (1 to 200 bytes of UTF-8, no control
        characters; else GmqError 400): a topic with grouped jobs pops its
        groups in turn, priority ordering the jobs within a group, and a
        popped job shows its "group".

        keep_completed (seconds) is how long the job is kept after its ack,
        "completed", with the ack's result (see ack), over its topic's
        keep_completed; 0 deletes it at its ack, whatever its topic says.

        timeout (seconds) is how long a worker's handler may run on the job:
        a Worker stops a handler past it, or past its own timeout, whichever
        is shorter, and fails the job. A popped job shows it ("timeout").

        unique ({"key", "for": seconds, "mode": "reject", "replace" or
        "debounce"}) keeps one job per key in the topic while the key is held
        ("for" seconds after the push that took it). push then returns gmq's
        answer (Pushed), not the bare id: a held key in mode reject raises
        GmqError 409, whose held_by names the job that holds it; a replace or
        debounce of the waiting job that holds it returns that job's id with
        "unique": "replaced" or "debounced". A reserved or finished job is
        never changed: a fresh job takes the key.

        gmq checks a job_id before a key, so a retried unique push stays one
        job. With a job_id, a retry's 409 is taken as stored only when it is
        the id's, or names the job_id as the holder; another holder is raised.
        (A job done and gone before the retry is named by its number: that
        409 is raised though the job ran once.) Without a job_id a retry's
        409 may name the job the first try stored: the key was taken once.
        A retried replace or debounce changes that job again with the same
        data, unless it was popped in between: then a fresh job is stored.

        after (job ids, by number or client id, in any topic) keeps the job
        "waiting" until each has completed; then it is ready, or delayed by
        its delay counted from then. Each must be there: an unknown one is
        GmqError 400, one that died already 409. on_dependency_failure is
        "cancel" (gmq's default: a dependency that dies or is cancelled
        cancels it) or "run" (that dependency counts as done); with_results
        keeps each dependency's result, which get_job shows as its
        "dependency_results" by id. then and on_dead are follow-ups (dicts
        as push_batch takes them, without "id" or "unique"; a then's may
        have "with_result": True, which wraps its body as {"body", "result":
        this job's result}), pushed once when the job completes, when it
        dies; get_job shows the ids they will have. A bad one is GmqError
        400 naming it ("then: job N")."""
        job = push_fields(topic, body, delay, ttr, priority, job_id, retry, unique, group, keep_completed, timeout)
        job.update(workflow_fields(after, on_dependency_failure, with_results, then, on_dead))
        settled = stored_as(job_id) if job_id is not None else None
        answer = self._call("POST", "/api/v1/jobs", job, settled_by=settled)
        if answer is SETTLED:
            answer = {"id": str(job_id)}
        if unique is None:
            return str(answer["id"])
        return cast(Pushed, answer)

    def push_batch(self, jobs: Sequence[Mapping[str, Any]]) -> List[str]:
        """Store several jobs (dicts with topic, body (a string, a dict or a
        list, as push's) and optional delay, TTR, priority, id, retry,
        unique, group, keep_completed, timeout, and push's workflow fields:
        after, on_dependency_failure, with_results, then, on_dead): all, or
        on bad input none. Returns their ids.

        A 503 after part of the batch was stored names the stored jobs; a
        retry then sends only the rest when it can tell which those are
        (every job has an id, or none was stored). Otherwise the GmqError
        is raised, its body's "stored_ids" listing what was stored."""
        pending = [dict(j) for j in jobs]
        stored: Set[str] = set()  # the ids of jobs an earlier try stored
        for attempt in range(self.retries + 1):
            try:
                ids = self._send("POST", "/api/v1/jobs/batch", {"jobs": pending})["ids"]
                return merge_ids(jobs, stored, ids)
            except GmqError as e:
                listed: List[Any] = e.body.get("stored_ids") or []
                done = [str(i) for i in listed]
                if e.status != 503 or attempt == self.retries or not can_skip(pending, done):
                    raise
                stored.update(done)
                pending = [j for j in pending if j.get("id") not in stored]
                if not pending:  # it failed after storing them all
                    return merge_ids(jobs, stored, [])
                time.sleep(self._retry_delay(attempt, e.retry_after))
        raise AssertionError("unreachable")  # pragma: no cover

    def pop(self, topics: Iterable[str], timeout: float = 0) -> Optional[Job]:
        """Reserve a job from the first listed topic that has one, waiting up
        to timeout seconds (topics: a list, or one topic's name). Returns the
        job, or None.

        A job whose body json.loads cannot give back as it was sent (a lone
        UTF-16 surrogate escape, which it keeps as a str no UTF-8 can write,
        a number past a double, read as inf, or arrays or objects nested so
        deep that it raises RecursionError: gmq refuses all three since
        issue 49, but a job stored before may hold one) is returned with
        "body" None and "decode_error" saying why, so that the caller can
        fail it; pop_many and the pops with an ack mark such jobs alike,
        and the worker fails them. Nothing is raised: the job is reserved,
        and a raise would leave it so until its TTR."""
        if isinstance(topics, str):
            topics = [topics]
        return self._call("POST", "/api/v1/pop", {"topics": list(topics), "timeout": timeout}, wait=timeout)

    @overload
    def ack(self, job_id: str, attempt: int = 0, token: Optional[str] = None, *, result: Any = None,
            push: None = None) -> None: ...

    @overload
    def ack(self, job_id: str, attempt: int = 0, token: Optional[str] = None, *, result: Any = None,
            push: Sequence[Mapping[str, Any]]) -> List[str]: ...

    def ack(self, job_id: str, attempt: int = 0, token: Optional[str] = None, *, result: Any = None,
            push: Optional[Sequence[Mapping[str, Any]]] = None) -> Optional[List[str]]:
        """Finish a popped job; attempt fences the ack to that delivery, and
        token (the popped job's "token") to that job: a 404 when it is gone,
        whatever job its id names now.

        result (None: none) is any value json.dumps encodes: gmq keeps the
        job, completed, with it for its topic's keep_results (an hour by
        default), or as its keep_completed (its topic's or its own) says
        where one is set, and get_job shows it as the job's "result"; where
        neither keeps it (0), it is dropped with the job. One json.dumps
        refuses (or NaN)
        raises its TypeError or ValueError before any request; one over the
        topic's max_result (16 KiB by default) is GmqError 413, and the job
        stays reserved.

        push are follow-ups: jobs (dicts as push_batch takes them, but
        without "id" or "unique"; 1 to 100) that gmq pushes once the ack
        succeeds, each exactly once, the ack and they together or not at
        all. ack then returns their ids, in push's order (None without
        push). It returns [] when an earlier ack completed the job (gmq
        answers "again": that ack's follow-ups stand) or a retry after a
        503 finds the job gone (the first try acked it). A bad follow-up
        is GmqError 400 (413: too big) naming it ("push: job N" or
        "follow-up N"); a broker or store too old for follow-ups, Redis at
        maxmemory or a server status that refuses pushes is a 503 (retried
        as any); either way the job stays reserved. An empty push is a
        plain ack."""
        args = delivery(attempt, token)
        if result is not None:
            args["result"] = checked_result(result)
        if push:
            args["push"] = [dict(j) for j in push]
        answer = self._call("POST", job_path(job_id, "ack"), args, settled_by=_gone)
        if push is None:
            return None
        return [] if answer is SETTLED or not answer else [str(i) for i in answer.get("pushed") or []]

    def ack_and_pop(self, job_id: str, attempt: int, topics: Iterable[str], timeout: float = 0,
                    token: Optional[str] = None, *, result: Any = None) -> Optional[Job]:
        """Finish a popped job (with a result, as ack's) and pop the next in
        the same request, waiting up to timeout seconds. Returns the next
        job, or None.

        If the ack fails (GmqError), nothing was popped. If the ack went
        through and only the pop failed with a 503, the pop is retried on
        its own; any error after a good ack has the id in its acked."""
        topics = list(topics)
        payload = delivery(attempt, token)
        if result is not None:
            payload["result"] = checked_result(result)
        payload["next"] = {"topics": topics, "timeout": timeout}
        try:
            answer = self._call("POST", job_path(job_id, "ack"), payload, wait=timeout, settled_by=_gone)
        except GmqError as e:
            if e.acked is None or e.status != 503:
                raise
            answer = SETTLED
        if answer is not SETTLED:
            return answer
        try:  # the ack stood; only the pop is left to do
            return self.pop(topics, timeout)
        except GmqError as e:
            e.body.setdefault("acked", str(job_id))
            raise

    def pop_many(self, topics: Iterable[str], count: int, timeout: float = 0) -> List[Job]:
        """Reserve up to count jobs: wait up to timeout seconds for one, then
        take as many as are ready. Returns a list (empty when none came)."""
        if isinstance(topics, str):
            topics = [topics]
        payload = {"topics": list(topics), "count": count, "timeout": timeout}
        answer = self._call("POST", "/api/v1/pop", payload, wait=timeout)
        return list(answer["jobs"]) if answer else []

    def ack_many(self, jobs: Iterable[Mapping[str, Any]], topics: Optional[Iterable[str]] = None,
                 count: int = 0, timeout: float = 0) -> Dict[str, Any]:
        """Finish popped jobs (each fenced by its attempt and token, and
        with its "result" and its follow-ups, "push", when the dict has
        them: as ack's) in one request and, with count > 0, pop up to count
        more. Returns the answer: "acked" (ids), "failed" ([{"id",
        "status", "error"}]), with follow-ups "pushed" ({acked id: [the
        follow-ups' ids]}) and, with count, "jobs". A follow-up gmq cannot
        read fails the whole request (GmqError 400); one it refuses at the
        ack (an "id", a "unique") fails that job's ack alone."""
        acks = [_ack_of(j) for j in jobs]
        payload: Dict[str, Any] = {"jobs": acks}
        if count > 0:
            payload["next"] = {"topics": list(topics or []), "count": count, "timeout": timeout}
        return self._call("POST", "/api/v1/ack", payload, wait=timeout)

    def fail(self, job_id: str, attempt: int = 0, error: str = "", token: Optional[str] = None) -> Job:
        """Report that a popped job failed, with why: it waits its retry
        policy's backoff, or goes to its topic's dead set past max_attempts.
        Returns the job as it now is (state "delayed" or "dead")."""
        args = delivery(attempt, token)
        args["error"] = error[:MAX_ERROR]
        return self._call("POST", job_path(job_id, "fail"), args)

    def fail_many(self, jobs: Iterable[Mapping[str, Any]], error: str = "") -> Dict[str, Any]:
        """Report several failures in one request (each fenced by its
        attempt and token). Returns "jobs" (as they now are) and "failed"
        ([{"id", "status", "error"}])."""
        error = error[:MAX_ERROR]
        fails = [dict(delivery(j.get("attempt", 0), j.get("token")), id=j["id"], error=error) for j in jobs]
        payload = {"jobs": fails}
        return self._call("POST", "/api/v1/fail", payload)

    def release(self, job_id: str, attempt: int = 0, delay: float = 0, priority: Optional[int] = None,
                token: Optional[str] = None) -> Job:
        """Give a popped job back, ready again after delay seconds."""
        args = delivery(attempt, token)
        args["delay"] = delay
        if priority is not None:
            args["priority"] = priority
        return self._call("POST", job_path(job_id, "release"), args)

    def bury(self, job_id: str, attempt: int = 0, priority: Optional[int] = None, token: Optional[str] = None) -> Job:
        """Park a popped job until it is kicked."""
        args = delivery(attempt, token)
        if priority is not None:
            args["priority"] = priority
        return self._call("POST", job_path(job_id, "bury"), args)

    def touch(self, job_id: str, attempt: int = 0, token: Optional[str] = None) -> Job:
        """Give a popped job a fresh TTR."""
        return self._call("POST", job_path(job_id, "touch"), delivery(attempt, token))

    def update(self, job_id: str, delay: Optional[float] = None, priority: Optional[int] = None,
               body: Optional[Body] = None) -> Job:
        """Change a ready or delayed job's delay (seconds from now; 0: ready
        at once), priority or body (a string, or a dict or list: a JSON
        object or array, as push's), those given, in one step; returns the job
        as it now is. A reserved, buried or dead job raises GmqError 409."""
        given = (("delay", delay), ("priority", priority), ("body", body))
        args = {name: value for name, value in given if value is not None}
        return self._call("PATCH", job_path(job_id), args)

    def get_job(self, job_id: str) -> Job:
        """A job as it now is, in any state: its failures and last_error, and
        a completed job's completed_at and result (see Job). GmqError 404
        when gmq knows none by that id (acked and not kept, or deleted)."""
        return self._call("GET", job_path(job_id), None)

    def worker(self, topics: Iterable[str], handler: "Handler", concurrency: int = 1, poll: float = 5.0,
               handle_signals: bool = True, logger: Optional[logging.Logger] = None,
               timeout: Optional[float] = None) -> "Worker":
        """A Worker running handler on the jobs of topics with this client:
        call its run(). See gmq_client.Worker for the options."""
        from gmq_client.worker import Worker  # here: worker.py imports this module

        return Worker(self, topics, handler, concurrency=concurrency, poll=poll,
                      handle_signals=handle_signals, logger=logger, timeout=timeout)

    def _call(self, method: str, path: str, payload: Any, wait: float = 0,
              settled_by: Optional[Callable[[GmqError], bool]] = None) -> Any:
        """Send a request, retrying a 503 (see Client) unless its answer
        says part of the work was done (an ack's "acked", a push that waits:
        the "internal_id" it stored, a batch's create: the "batch" it made
        and cancelled). An error on a retry that settled_by says is "done"
        means an earlier try went through: _call then returns SETTLED."""
        for attempt in range(self.retries + 1):
            try:
                return self._send(method, path, payload, wait)
            except GmqError as e:
                if attempt > 0 and settled_by is not None and settled_by(e):
                    return SETTLED
                done_in_part = e.acked is not None or "internal_id" in e.body or "batch" in e.body
                if e.status != 503 or attempt == self.retries or done_in_part:
                    raise
                time.sleep(self._retry_delay(attempt, e.retry_after))
        raise AssertionError("unreachable")  # pragma: no cover

    def _retry_delay(self, attempt: int, retry_after: Optional[float]) -> float:
        """How long to wait before retry number attempt+1: a backoff doubling
        from FIRST_BACKOFF up to max_backoff, or the answer's Retry-After when
        that is longer (the broker's is the time it expects to need)."""
        backoff = min(FIRST_BACKOFF * 2 ** min(attempt, 30), self.max_backoff)
        return max(backoff, retry_after or 0.0)

    def _send(self, method: str, path: str, payload: Any, wait: float = 0) -> Any:
        """One request: the decoded answer (None for 204), or GmqError."""
        headers = {"User-Agent": "gmq-python/" + VERSION}
        data = None
        if payload is not None:
            data = json.dumps(payload).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout + wait) as resp:
                if resp.status == 204:
                    return None
                return mark_undecodable(loads(resp.read().decode("utf-8")))
        except urllib.error.HTTPError as e:
            raise _error(e) from None


def _ack_of(job: Mapping[str, Any]) -> Dict[str, Any]:
    """One job of a batch ack: its id, delivery, and result and follow-ups when it has them."""
    ack = dict(delivery(job.get("attempt", 0), job.get("token")), id=job["id"])
    if job.get("result") is not None:
        ack["result"] = checked_result(job["result"])
    if job.get("push"):
        ack["push"] = [dict(j) for j in job["push"]]
    return ack


def _gone(e: GmqError) -> bool:
    """Whether a retried ack's error says an earlier try acked it: 404."""
    return e.status == 404


def _error(e: urllib.error.HTTPError) -> GmqError:
    """The GmqError for an HTTP error answer: gmq's {"error": ...}, or the
    text of an answer that is not gmq's (a proxy's)."""
    text = e.read().decode("utf-8", "replace")
    try:
        decoded: Any = json.loads(text)
    except ValueError:
        decoded = None
    body = cast(Dict[str, Any], decoded) if isinstance(decoded, dict) else {}
    message = body.get("error")
    return GmqError(e.code, message if isinstance(message, str) else text, body,
                    seconds(e.headers.get("Retry-After") if e.headers else None))
