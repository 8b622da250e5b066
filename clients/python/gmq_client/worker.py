"""The worker loop: threads that pop, run a handler, touch, ack or fail.

    worker = client.worker(["mail"], send_mail, concurrency=4)
    worker.run()   # until SIGTERM, SIGINT or worker.stop()
"""
import inspect
import logging
import signal
import threading
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from gmq_client._wire import checked_result
from gmq_client.client import Client, GmqError, Job

__all__ = ["Done", "Handler", "Worker"]

Handler = Callable[..., Any]  # handler(job), or handler(job, stop), returning the result (None: none): see Worker

# POP_FATAL are a pop's answers that no retry mends: a wrong token, a bad
# topic name. The worker stops on them and run() raises the error.
POP_FATAL = (400, 401, 403, 404)

# MAX_PAUSE caps the wait between pops that keep failing (a broker that is
# down or restarting): 0.5 s, 1 s, 2 s... up to this.
MAX_PAUSE = 10.0


class Done:
    """What a handler returns to end its job with follow-ups: the worker
    acks the job with result (None: none) and push, jobs (dicts as
    Client.push_batch takes them, without "id" or "unique") that gmq
    pushes once the ack succeeds, each exactly once (see Client.ack).

        def ship(job):
            return Done(result={"shipped": True}, push=[{"topic": "emails", "body": job["body"]}])

    An ack with follow-ups pops the next job in a request of its own (gmq
    takes no next pop with them). Follow-ups gmq refuses (400, or 413
    once the ack is sent without its result) fail the job with gmq's
    reason, so that it shows as the job's last_error and is tried again
    by its retry policy, or dies: acking it without them would lose what
    comes next."""

    __slots__ = ("result", "push")

    def __init__(self, result: Any = None, push: Optional[Sequence[Mapping[str, Any]]] = None) -> None:
        self.result = result
        self.push: List[Mapping[str, Any]] = list(push or [])

    def __repr__(self) -> str:
        return "Done(result=%r, push=%r)" % (self.result, self.push)


class Worker:
    """Runs handler(job) on the jobs of topics, in concurrency threads.

    Each thread pops with a long poll of poll seconds, runs the handler,
    and then:
    - on return, acks the job (popping the next in the same request), with
      what the handler returned as the ack's result (None: none), which
      gmq keeps with the job where its topic keeps completed jobs
      (keep_completed; get_job shows it). A result json.dumps cannot
      encode, or one over the topic's max_result (413), is logged and
      dropped, and the job acked without it: it was done, and is not run
      again for its result. A Done it returns carries the result and
      follow-ups, jobs gmq pushes once the ack succeeds (see Done);
    - on an exception, fails the job with "Type: message", so it waits
      its retry policy's backoff or goes to the dead set past max_attempts;
    - fails a job whose body cannot be read as sent (marked "decode_error":
      see Client.pop) with that reason, without running the handler;
    - while the handler runs, a thread touches the job every TTR/2, so a
      handler may run past the TTR without the job being delivered again;
    - with timeout (seconds; None, the default: no limit), or a job pushed
      with a timeout of its own (the shorter of the two where both are
      set), a handler still running after it has its stop event set (a threading.Event, given as
      a second argument to a handler that takes two: handler(job, stop)),
      and when it returns the job is failed with "gmq: the handler ran out
      of time after T s", whatever it returned. Python cannot stop a thread:
      a handler that does not watch its event runs on, its job touched;
    - a job cancelled while its handler runs (Client.cancel) is learnt at
      the next touch (every TTR/2), at a progress call the handler makes
      through this worker's client (Client.progress, which then raises
      GmqError 410), or at the ack or fail: a 410. The first two set the
      handler's stop event. The job has ended, so it is neither acked nor
      failed, whatever the handler returns or raises, and the worker logs
      it (INFO). A handler that finishes before its job's first touch is
      told nothing: its ack's 410 is logged.

    stop() (and SIGTERM or SIGINT, when run() is called in the main thread
    and handle_signals is true) stops the pops; the jobs in hand finish and
    are acked or failed, then run() returns. A pop already waiting when
    the stop comes may still bring a job: that job is released at once,
    ready for another worker, not run, so a stop takes at most poll seconds
    plus the handlers in flight. A second signal is not caught: SIGTERM
    then ends the process, SIGINT raises KeyboardInterrupt, and the jobs in
    hand come back after their TTR.

    A pop that fails for want of a broker (network error, 5xx) is retried
    after a pause; one that no retry mends (400, 401, 403, 404) stops the
    worker, and run() raises it once the jobs in hand are done.
    """

    def __init__(self, client: Client, topics: Iterable[str], handler: Handler, concurrency: int = 1,
                 poll: float = 5.0, handle_signals: bool = True, logger: Optional[logging.Logger] = None,
                 timeout: Optional[float] = None) -> None:
        self._topics = list(topics)
        if not self._topics or concurrency < 1 or poll <= 0:
            raise ValueError("gmq worker: give at least one topic, concurrency >= 1 and poll > 0")
        if timeout is not None and timeout <= 0:
            raise ValueError("gmq worker: timeout is a number of seconds over 0, or None (no limit)")
        self._timeout = timeout
        self._takes_stop = _takes_two(handler)
        self._client = client
        self._handler = handler
        self._concurrency = concurrency
        self._poll = poll
        self._handle_signals = handle_signals
        self._log = logger or logging.getLogger("gmq_client")
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._started = False
        self._fatal: Optional[BaseException] = None

    def run(self) -> None:
        """Work until stopped; return once the jobs in hand are done. Raises
        what stopped the worker when that was an error (see Worker)."""
        with self._lock:
            if self._started:
                raise RuntimeError("gmq worker: run() was already called")
            self._started = True
        restore = self._catch_signals() if self._handle_signals else _nothing
        try:
            threads = [threading.Thread(target=self._loop, name="gmq-worker-%d" % i, daemon=True)
                       for i in range(self._concurrency)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()  # a signal's handler still runs while the main thread waits here
        finally:
            restore()
        if self._fatal is not None:
            raise self._fatal

    def stop(self) -> None:
        """Stop popping; run() returns once the jobs in hand are done. Safe
        to call from any thread, a handler or a signal handler."""
        self._stopping.set()

    @property
    def stopping(self) -> bool:
        """Whether stop() was called (or a signal or an error stopped it)."""
        return self._stopping.is_set()

    def _catch_signals(self) -> Callable[[], None]:
        """Make SIGTERM and SIGINT stop the worker, once; returns what puts
        the previous handlers back. Only the main thread may set them."""
        if threading.current_thread() is not threading.main_thread():
            return _nothing
        previous: Dict[int, Any] = {}
        for sig in (signal.SIGTERM, signal.SIGINT):
            old = signal.getsignal(sig)
            previous[sig] = old if old is not None else signal.SIG_DFL

        def restore() -> None:
            for sig, old in previous.items():
                signal.signal(sig, old)

        def on_signal(signum: int, frame: Any) -> None:
            self.stop()  # first: the line below is then true when it is read
            self._log.info("gmq worker: %s: no more pops; finishing the jobs in hand",
                           signal.Signals(signum).name)
            restore()  # a second signal acts as it would have

        for sig in previous:
            signal.signal(sig, on_signal)
        return restore

    def _loop(self) -> None:
        """One thread's work: pop, handle, ack or fail, until stopped."""
        job: Optional[Job] = None
        while True:
            if job is None:
                job = self._pop()
                if job is None:
                    return
            if self._stopping.is_set():
                self._release(job)  # it came after the stop
                return
            if job.get("decode_error"):  # no handler can take it: failed, not left reserved
                self._fail_undecodable(job)
                job = None
                continue
            job = self._work(job)

    def _fail_undecodable(self, job: Job) -> None:
        """Fail a job whose body cannot be read as sent (see Client.pop)
        with that reason, without running the handler."""
        error = job["decode_error"]
        self._log.warning("gmq worker: job %s failed: %s", job["id"], error)
        self._settle("fail", job, lambda: self._client.fail(job["id"], job["attempt"], error, token=job.get("token")))

    def _pop(self) -> Optional[Job]:
        """Pop until a job comes (returned) or the worker stops (None)."""
        failures = 0
        while not self._stopping.is_set():
            try:
                job = self._client.pop(self._topics, timeout=self._poll)
            except Exception as e:  # noqa: BLE001 - a worker outlives a broker's restart
                if isinstance(e, GmqError) and e.status in POP_FATAL:
                    self._give_up(e)
                    return None
                failures += 1
                pause = min(MAX_PAUSE, 0.5 * 2 ** (failures - 1))
                self._log.warning("gmq worker: pop from %s: %s (next try in %.1f s)", self._topics, e, pause)
                self._stopping.wait(pause)
                continue
            if job is not None:
                return job
            failures = 0
        return None

    def _work(self, job: Job) -> Optional[Job]:
        """Run the handler on job and settle it: ack (and pop the next in the
        same request, returned, unless stopping) or fail."""
        error, result, cancelled = self._handle(job)
        if cancelled:
            self._log.info("gmq worker: job %s was cancelled: its handler was stopped; neither acked nor failed",
                           job["id"])
            return None
        if error is not None:
            token = job.get("token")
            self._settle("fail", job, lambda: self._client.fail(job["id"], job["attempt"], error, token=token))
            return None
        push: List[Mapping[str, Any]] = []
        if isinstance(result, Done):
            result, push = result.result, result.push
        result = self._sendable(job, result)
        if self._stopping.is_set() or push:  # no next pop with follow-ups: the loop pops on its own
            self._settle("ack", job, lambda: self._ack(job, result, pop=False, push=push))
            return None
        try:
            return self._ack(job, result, pop=True)
        except Exception as e:  # noqa: BLE001 - logged; the loop pops again
            if _is_cancelled(e):
                self._log.info("gmq worker: job %s was cancelled while its handler ran: not acked", job["id"])
                return None
            what = "pop after acking" if isinstance(e, GmqError) and e.acked else "ack"
            self._log.warning("gmq worker: %s %s: %s", what, job["id"], e)
            return None

    def _sendable(self, job: Job, result: Any) -> Any:
        """The handler's result, or None when it cannot be sent as JSON."""
        if result is None:
            return None
        try:
            return checked_result(result)
        except (TypeError, ValueError) as e:
            self._log.warning("gmq worker: job %s: its result is not JSON (%s): acking it without", job["id"], e)
            return None

    def _ack(self, job: Job, result: Any, pop: bool, push: Sequence[Mapping[str, Any]] = ()) -> Optional[Job]:
        """Ack job with result and follow-ups (push) and, when pop, pop the
        next in the same request. A result gmq refuses as too big (413: the
        ack did nothing) is dropped, and the ack sent again without it.
        Follow-ups gmq refuses (400 or 413) fail the job (see Done)."""
        while True:
            try:
                if push:
                    self._client.ack(job["id"], job["attempt"], token=job.get("token"), result=result, push=push)
                    return None
                if not pop:
                    self._client.ack(job["id"], job["attempt"], token=job.get("token"), result=result)
                    return None
                return self._client.ack_and_pop(job["id"], job["attempt"], self._topics, timeout=self._poll,
                                                token=job.get("token"), result=result)
            except GmqError as e:
                if result is not None and e.status == 413:
                    self._log.warning("gmq worker: job %s: its result is too big to keep (%s): acking it without",
                                      job["id"], e)
                    result = None
                    continue
                if not push or e.status not in (400, 413):
                    raise
                self._log.warning("gmq worker: job %s: its follow-ups were refused (%s): failing it", job["id"], e)
                self._client.fail(job["id"], job["attempt"], str(e), token=job.get("token"))
                return None

    def _handle(self, job: Job) -> Tuple[Optional[str], Any, bool]:
        """Run the handler, touching the job while it runs. Returns the error
        to fail the job with (None: done), the handler's result, and whether
        the job was found cancelled meanwhile (then neither is sent). An exit
        (SystemExit, KeyboardInterrupt) fails the job too, and stops the
        worker: run() raises it."""
        stop, cancelled = threading.Event(), threading.Event()

        def on_cancel() -> None:
            cancelled.set()
            stop.set()

        forget = self._client._watch(str(job["id"]), job["attempt"], on_cancel)
        keeper = _Keeper(self._client, job, self._log, on_cancel)
        limit = _limit(self._timeout, job.get("timeout"))
        timer = None
        if limit is not None:
            timer = threading.Timer(limit, stop.set)
            timer.daemon = True
            timer.start()
        result = None
        try:
            if self._takes_stop:
                result = self._handler(job, stop)
            else:
                result = self._handler(job)
            error = None
        except BaseException as e:  # noqa: BLE001 - every failure is reported to gmq
            if _is_cancelled(e):  # a call of the handler's found its job cancelled
                cancelled.set()
            elif isinstance(e, Exception):
                self._log.exception("gmq worker: job %s failed", job["id"])
            else:
                self._give_up(e)
            error = "%s: %s" % (type(e).__name__, e)
        finally:
            if timer is not None:
                timer.cancel()
            keeper.stop()
            forget()
        if cancelled.is_set():
            return error, result, True
        if stop.is_set():  # past its time: failed so, whatever the handler did after
            error = "gmq: the handler ran out of time after %g s" % limit
            self._log.warning("gmq worker: job %s: %s", job["id"], error)
        return error, result, False

    def _release(self, job: Job) -> None:
        self._log.info("gmq worker: releasing %s: it came after the stop", job["id"])
        self._settle("release", job, lambda: self._client.release(job["id"], job["attempt"], token=job.get("token")))

    def _settle(self, what: str, job: Job, call: Callable[[], Any]) -> None:
        """Make a call that ends a job's delivery; if it fails the job comes
        back after its TTR, so the error is logged, not raised. A 410 says
        the job was cancelled meanwhile: it has ended."""
        try:
            call()
        except Exception as e:  # noqa: BLE001
            if _is_cancelled(e):
                self._log.info("gmq worker: job %s was cancelled while its handler ran: not %s", job["id"],
                               {"ack": "acked", "fail": "failed"}.get(what, what + "d"))
                return
            self._log.warning("gmq worker: %s %s: %s (it comes back after its TTR)", what, job["id"], e)

    def _give_up(self, e: BaseException) -> None:
        """Stop the worker for e, which run() raises (the first such)."""
        self._log.error("gmq worker: stopping: %s", e)
        with self._lock:
            if self._fatal is None:
                self._fatal = e
        self.stop()


class _Keeper:
    """Touches one job every TTR/2 from a thread of its own, until stop().
    A touch answered 410 (the job was cancelled) calls on_cancel."""

    def __init__(self, client: Client, job: Job, log: logging.Logger, on_cancel: Callable[[], None]) -> None:
        self._client, self._job, self._log, self._on_cancel = client, job, log, on_cancel
        self._every = float(job.get("TTR") or 0) / 2
        self._done = threading.Event()
        self._thread: Optional[threading.Thread] = None
        if self._every > 0:
            self._thread = threading.Thread(target=self._run, name="gmq-touch-%s" % job["id"], daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop touching, waiting for a touch in flight, so that none comes
        after the job's ack."""
        self._done.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while not self._done.wait(self._every):
            try:
                self._client.touch(self._job["id"], self._job["attempt"], token=self._job.get("token"))
            except GmqError as e:
                if e.status == 410:  # cancelled: the job has ended
                    self._log.info("gmq worker: touch %s: %s; stopping its handler", self._job["id"], e)
                    self._on_cancel()
                    return
                if e.status in (404, 409):  # gone, or delivered again: no touch can help
                    self._log.warning("gmq worker: touch %s: %s; its handler still runs", self._job["id"], e)
                    return
                self._log.warning("gmq worker: touch %s: %s", self._job["id"], e)
            except OSError as e:
                self._log.warning("gmq worker: touch %s: %s", self._job["id"], e)


def _limit(worker: Optional[float], job: Any) -> Optional[float]:
    """How long a handler may run on a job (None: no limit): the worker's
    timeout or the job's own, the shorter where both are set."""
    own = float(job) if isinstance(job, (int, float)) and job > 0 else None
    if own is None or worker is None:
        return own if worker is None else worker
    return min(worker, own)


def _nothing() -> None:
    pass


def _is_cancelled(e: BaseException) -> bool:
    """Whether e is gmq's 410: the job was cancelled while reserved."""
    return isinstance(e, GmqError) and e.status == 410


def _takes_two(handler: Callable[..., Any]) -> bool:
    """Whether handler takes a second argument (the stop event): two
    positional parameters, or *args."""
    try:
        params = list(inspect.signature(handler).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature: give it the job alone
        return False
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2
