"""The shapes of what gmq takes and answers: a job's body (Body), a job as
gmq shows it (Job), a unique push's answer (Pushed), and an answer that is
not a success (GmqError). A leaf: every other module may import it, and
gmq_client.client gives them all under their old names."""
from typing import Any, Dict, List, Optional, TypedDict, Union

__all__ = ["Body", "GmqError", "Job", "Pushed"]

# Body is a job's body: a string, or a dict or list, sent as a JSON object or
# array. gmq keeps a JSON body's compact text and gives it back as it came
# (a dict or list to this client; a string stays a string, even one whose
# text is JSON); it refuses a number, a bool or None as a body (400).
Body = Union[str, Dict[str, Any], List[Any]]


class _Shown(TypedDict):
    """The fields gmq always shows of a job."""

    id: str
    internal_id: int
    topic: str
    body: Body  # as pushed: a str, or a dict or list for a JSON object or array
    state: str  # waiting, ready, delayed, reserved, buried, dead, completed or cancelled
    priority: int
    delay: float  # seconds
    TTR: float  # seconds a reservation lasts without a touch
    attempt: int
    reserves: int
    consumeNum: int  # reserves, by the original gmq's name
    timeouts: int
    releases: int
    buries: int
    kicks: int
    created: str  # RFC 3339
    age: float  # seconds
    time_left: float  # seconds until a reservation runs out (or a delayed job is due)
    failures: int


class Job(_Shown, total=False):
    """A job as gmq shows it (a popped one is "reserved"). Pass its id,
    attempt and token back to ack, fail, touch, release and bury: the
    attempt fences the call to this delivery, so a worker whose TTR ran out
    cannot ack the job that a later delivery holds, and the token (a pop's
    only) to this job, so a late ack cannot reach a new job pushed again
    with the same id (after Redis lost its data). ack_many, fail_many and
    the worker send it themselves. The fields below are shown when set."""

    due: str
    expires: str
    last_error: str
    dead_at: str
    traceparent: str
    group: str  # its fair group
    token: str  # a popped job's: names its delivery (opaque: send it back as it came)
    decode_error: str  # a popped job's whose body cannot be read as sent (body None): why (see Client.pop)
    keep_completed: float  # seconds it is kept completed after its ack: its own, when pushed with one
    timeout: float  # seconds a worker's handler may run on it, when pushed with one
    completed_at: str  # a completed job's (RFC 3339): when its ack completed it
    result: Any  # a completed job's: the result its ack gave, as that JSON (absent: none)
    cancelled_at: str  # a cancelled job's (RFC 3339): when it ended so
    cancelling: bool  # True on a reserved job whose cancel was asked (see cancel)
    progress: Any  # the last progress its consumer reported (see progress), as that JSON
    log: List[Dict[str, str]]  # its log, oldest first: {"at": RFC 3339, "line": ...}
    # Workflows (gmq's docs/workflows.md), on a job read back with get_job:
    then: List[str]  # the ids its then follow-ups are pushed under at its completion (gone once pushed)
    on_dead: List[str]  # the ids its on_dead follow-ups are pushed under at its death (gone once pushed)
    after: List[str]  # pushed with after: the jobs it waits for, by number (a client id given is shown so)
    waiting_for: List[str]  # those of after not yet completed (state "waiting" while any is)
    on_dependency_failure: str  # "cancel" or "run"
    dependency_results: Dict[str, Any]  # with_results: each completed dependency's result (None: none), by after's id
    batch: str  # the batch it belongs to (see create_batch)


class Pushed(TypedDict, total=False):
    """What a push with unique did: gmq's answer. id names the job stored,
    or, when unique is "replaced" or "debounced", the waiting job that held
    the key and was changed instead (no new job was made). internal_id is
    left out when a retry found the job stored by an earlier try."""

    id: str
    internal_id: int
    unique: str  # "replaced" or "debounced"; absent for a new job


class GmqError(Exception):
    """An answer from gmq that is not a success: its HTTP status, gmq's
    reason, and the whole answer (body) for the fields some errors carry:
    "acked" when an ack went through but the pop that followed it failed,
    "stored_ids" when a batch push failed part way, "id" when a unique
    push's key is held (see held_by), "batch" when a batch's create made
    the batch, then cancelled it (see create_batch)."""

    def __init__(self, status: int, message: str, body: Optional[Dict[str, Any]] = None,
                 retry_after: Optional[float] = None) -> None:
        super().__init__("gmq: %d: %s" % (status, message))
        self.status = status
        self.message = message
        self.body: Dict[str, Any] = body if body is not None else {}
        self.retry_after = retry_after  # seconds, from the Retry-After header

    @property
    def acked(self) -> Optional[str]:
        """The id of the job whose ack went through before this error, if any."""
        acked = self.body.get("acked")
        return acked if isinstance(acked, str) else None

    @property
    def held_by(self) -> Optional[str]:
        """For a 409 to a unique push (mode reject): the id of the job that
        holds the key, which may be done already (the key is held for its
        window whatever becomes of the job); None for any other error."""
        held = self.body.get("id")
        return held if self.status == 409 and isinstance(held, str) else None
