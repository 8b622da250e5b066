"""How a job goes and ends: a consumer's progress, an operator's cancel,
and a producer's wait for the end (a part of Client). A worker registers
the job its handler runs here, so that a progress call answered 410 (the
job was cancelled) stops that handler."""
import threading
import urllib.parse
from typing import TYPE_CHECKING, Any, Callable, Dict, Mapping, Optional, Tuple

from gmq_client._wire import SETTLED, checked_result, delivery, job_path, push_fields, stored_as

if TYPE_CHECKING:
    from gmq_client.client import Body, Job

__all__ = ["OutcomeCalls"]


class OutcomeCalls:
    """progress, cancel, wait_end and push_and_wait (Client has them)."""

    _running: Dict[str, Tuple[int, Callable[[], None]]]
    _running_lock: threading.Lock

    if TYPE_CHECKING:  # Client's, which every call goes through
        def _call(self, method: str, path: str, payload: Any, wait: float = 0,
                  settled_by: Optional[Callable[[Any], bool]] = None) -> Any: ...

    def _init_outcomes(self) -> None:
        self._running = {}  # job id -> (attempt, what stops its handler): the worker's jobs in hand
        self._running_lock = threading.Lock()

    def progress(self, job_id: str, attempt: int = 0, progress: Any = None, log: Optional[str] = None,
                 token: Optional[str] = None) -> "Job":
        """Report how far a popped job has got: progress (any value
        json.dumps encodes; None: the last one given stays) and log, a line
        for the job's log (None: none). gmq keeps the last progress and the
        topic's max_log lines of the log (each cut to 1 KiB) with the job,
        which get_job shows ("progress"; "log": [{"at", "line"}]), and
        starts the job's TTR again as a touch does. Returns the job as it
        now is. Fenced by attempt and token, as ack is (another delivery's
        progress is GmqError 409).

        A job cancelled while it is reserved raises GmqError 410: it has
        ended, and its consumer should stop its work and neither ack nor
        fail it. When a worker of this client runs the job's handler, that
        410 also stops the handler: its stop event is set (see Worker). A
        progress over the topic's max_result is GmqError 413; one json.dumps
        refuses raises before any request. A retry after a 503 may log the
        line twice."""
        args = delivery(attempt, token)
        if progress is not None:
            args["progress"] = checked_result(progress)
        if log is not None:
            args["log"] = log
        try:
            return self._call("POST", job_path(job_id, "progress"), args)
        except Exception as e:
            if getattr(e, "status", None) == 410:
                self._cancelled(str(job_id), attempt)
            raise

    def cancel(self, job_id: str) -> "Job":
        """End a job that should not run, and return it as it now is. A
        waiting job (delayed, ready, buried) ends at once, state "cancelled":
        kept as a completed job would be (its keep_completed, or its
        topic's), or, where nothing keeps it, removed ({"id", "state":
        "cancelled"} alone). A reserved job is marked ("cancelling": True)
        and ends cancelled at its consumer's next touch, progress, ack,
        release, bury or fail, each answered 410 (a worker then stops the
        job's handler), or when its TTR runs out. An ended job (completed,
        dead, cancelled) raises GmqError 409, an unknown one 404."""
        return self._call("POST", job_path(job_id, "cancel"), None)

    def wait_end(self, job_id: str, timeout: float = 0) -> Optional["Job"]:
        """Wait up to timeout seconds (gmq caps it at its max_pop_timeout,
        60 by default) for a job's end, and return how it ended, or None when
        it has not within timeout (0: a look). A job kept after its end
        comes back whole: state "completed" with its "result", "dead" with
        its "last_error", or "cancelled". One that is not kept is {"id",
        "state"}, the state "acked", "deleted", "expired", "taken",
        "discarded", or "gone" (it ended while no broker could hear how). A
        job gmq does not know (never pushed, or ended before the wait and not
        kept) raises GmqError 404."""
        path = "%s/wait?timeout=%s" % (job_path(job_id), urllib.parse.quote(repr(float(timeout))))
        return self._call("GET", path, None, wait=timeout)

    def push_and_wait(self, topic: str, body: "Body", wait: float, delay: float = 0, ttr: Optional[float] = None,
                      priority: Optional[int] = None, job_id: Optional[str] = None,
                      retry: Optional[Mapping[str, Any]] = None, *, unique: Optional[Mapping[str, Any]] = None,
                      group: Optional[str] = None, keep_completed: Optional[float] = None,
                      timeout: Optional[float] = None) -> Tuple[str, Optional["Job"]]:
        """Push a job as push does, then wait up to wait seconds for its end
        in the same request: request and response over the queue. Returns
        (the job's id, how it ended as wait_end says), the end None when the
        job has not ended within wait (wait again with wait_end). A job not
        kept that ended before the wait began comes back as {"id", "state":
        "gone"}.

        Its retries are push's: a retry whose 409 says an earlier try stored
        the job (with a job_id) waits for it with wait_end. When the push
        went through and only the wait failed (429: too many waiting; a
        503), the GmqError is raised at once, its body's "id" naming the job
        stored."""
        job = push_fields(topic, body, delay, ttr, priority, job_id, retry, unique, group, keep_completed, timeout)
        settled = stored_as(job_id) if job_id is not None else None
        path = "/api/v1/jobs?wait=" + urllib.parse.quote(repr(float(wait)))
        answer = self._call("POST", path, job, wait=wait, settled_by=settled)
        if answer is SETTLED:
            return str(job_id), self.wait_end(str(job_id), wait)
        if "state" not in answer:  # 202: not ended within wait
            return str(answer["id"]), None
        return str(answer["id"]), answer

    def _watch(self, job_id: str, attempt: int, stop: Callable[[], None]) -> Callable[[], None]:
        """Have a progress call answered 410 for this delivery call stop;
        returns what forgets it (the worker's, around its handler)."""
        with self._running_lock:
            self._running[job_id] = (attempt, stop)

        def forget() -> None:
            with self._running_lock:
                if self._running.get(job_id, (None,))[0] == attempt:
                    del self._running[job_id]

        return forget

    def _cancelled(self, job_id: str, attempt: int) -> None:
        """A call on job_id's delivery attempt was answered 410: stop the
        handler a worker of this client runs on it, if any."""
        with self._running_lock:
            held = self._running.get(job_id)
        if held is not None and (attempt in (0, held[0])):
            held[1]()

