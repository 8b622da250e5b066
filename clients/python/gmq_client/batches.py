"""Batches: their calls (a part of Client) and the shapes gmq shows them in.
A batch is jobs pushed together whose ends gmq counts: when every one has
ended it pushes the batch's on_complete job once, and on_success too if
none died; on_death once, at the first death (gmq's docs/workflows.md,
Batches)."""
import urllib.parse
from typing import (TYPE_CHECKING, Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, TypedDict,
                    cast)

__all__ = ["Batch", "CreatedBatch"]


class CreatedBatch(NamedTuple):
    """What create_batch made: the batch's id, and its jobs' ids in the
    order given (a tuple: id, ids = client.create_batch(...))."""

    id: str
    ids: List[str]


class _Shown(TypedDict):
    """The fields gmq always shows of a batch."""

    id: str
    state: str  # "open", "closed", "done" or "cancelled"
    total: int  # its jobs
    pending: int  # those that have not ended
    completed: int
    dead: int
    removed: int  # those that ended otherwise: deleted, expired, discarded, flushed or purged, cancelled
    created_at: str  # RFC 3339


class Batch(_Shown, total=False):
    """A batch as gmq shows it (get_batch, close_batch). The fields below
    are shown when set."""

    dead_jobs: Dict[str, str]  # (up to 100 of) its dead jobs' last errors, by id
    meta: Any  # the meta it was made with, as that JSON
    with_results: bool  # it keeps its completed jobs' results for its callbacks' summary
    callbacks: Dict[str, str]  # the ids its callbacks are pushed under, by kind ("on_complete"...)
    finished_at: str  # RFC 3339: when it was done, or cancelled and every job had ended


class BatchCalls:
    """create_batch, get_batch, add_to_batch, close_batch and cancel_batch
    (Client has them)."""

    if TYPE_CHECKING:  # Client's, which every call goes through
        def _call(self, method: str, path: str, payload: Any, wait: float = 0,
                  settled_by: Optional[Callable[[Any], bool]] = None) -> Any: ...

        def _send(self, method: str, path: str, payload: Any, wait: float = 0) -> Any: ...

    def create_batch(self, jobs: Sequence[Mapping[str, Any]], on_complete: Optional[Mapping[str, Any]] = None,
                     on_success: Optional[Mapping[str, Any]] = None, on_death: Optional[Mapping[str, Any]] = None,
                     meta: Any = None, open: bool = False, with_results: bool = False) -> CreatedBatch:
        """Create a batch and push its jobs (dicts as push_batch takes them,
        at most 1,000; [] makes an empty one, done at once unless open).
        Returns its id and its jobs' ids, in order; each job's view names
        the batch ("batch").

        on_complete, on_success and on_death are the callbacks (None: none):
        jobs as push takes them, without "id", "unique" or "after". One with
        "with_result": True gets the batch's summary as its result: its body
        becomes {"body": its body, "result": {"batch", "state", "total",
        "completed", "dead", "removed", "meta", "results"}}. meta is any
        value json.dumps encodes (None: none; at most 16 KiB), kept with the
        batch and in its summary; with_results keeps the completed jobs'
        results in the summary ("results", by id). open keeps the batch open
        for add_to_batch: it cannot be done before close_batch.

        A bad batch is GmqError 400, refused whole. A job its topic refuses
        as the batch is made (full: 507; its unique key held: 409) cancels
        the batch and its jobs pushed already, and no callback of it is
        ever pushed: the error's body["batch"] names it. A 503 is retried
        (see Client) only when it names no batch, so nothing of it was
        pushed; one that names a batch is raised, as a cancelled batch's
        jobs may have been popped before their cancel. Create it again."""
        payload: Dict[str, Any] = {"jobs": [dict(j) for j in jobs]}
        for name, callback in (("on_complete", on_complete), ("on_success", on_success), ("on_death", on_death)):
            if callback is not None:
                payload[name] = dict(callback)
        if meta is not None:
            payload["meta"] = meta
        if open:
            payload["open"] = True
        if with_results:
            payload["with_results"] = True
        answer = self._call("POST", "/api/v1/batches", payload)
        return CreatedBatch(str(answer["id"]), [str(i) for i in answer["ids"]])

    def get_batch(self, batch_id: str) -> Batch:
        """Batch batch_id as it now is: its state and counts. GmqError 404
        when gmq knows none (never made, or removed past its retention,
        [jobs] batch_retention: 7 days)."""
        return cast(Batch, self._call("GET", _batch_path(batch_id), None))

    def add_to_batch(self, batch_id: str, jobs: Sequence[Mapping[str, Any]]) -> List[str]:
        """Push jobs (dicts as push_batch takes them, 1 to 1,000) into batch
        batch_id, open, or closed and not done (a running job may add to
        its own batch: its view's "batch"). Returns their ids, in order.
        GmqError 404 for an unknown batch, 409 for a done or cancelled one.

        It is sent once: a 503 is raised, not retried, as gmq may have
        added the jobs before it failed, and they then run; or none. Look at
        get_batch's total, or give the jobs ids and add them again: one
        whose id is taken is refused (409), not pushed twice."""
        answer = self._send("POST", _batch_path(batch_id, "jobs"), {"jobs": [dict(j) for j in jobs]})
        return [str(i) for i in answer["ids"]]

    def close_batch(self, batch_id: str) -> Batch:
        """Close an open batch: it is done once its jobs have ended, and its
        callbacks are pushed then. Returns the batch as it now is. Closing a
        closed or done batch changes nothing (so a retry after a 503 is
        safe); a cancelled one is GmqError 409, an unknown one 404."""
        return cast(Batch, self._call("POST", _batch_path(batch_id, "close"), None))

    def cancel_batch(self, batch_id: str) -> int:
        """Cancel batch batch_id: its jobs that have not ended are cancelled
        (a reserved one at its consumer's next call, as cancel does), and no
        callback of it is pushed. Returns how many jobs it asked to cancel.
        A cancelled batch again: those its earlier cancel did not reach (0
        when none). A done one is GmqError 409, an unknown one 404. A 503
        part-way (a batch of many thousands) leaves the batch cancelled
        already, and is retried (see Client): the count is then the last
        try's."""
        return int(self._call("DELETE", _batch_path(batch_id), None)["cancelled"])


def _batch_path(batch_id: str, action: str = "") -> str:
    """The URL of a batch, or of an action on it."""
    path = "/api/v1/batches/" + urllib.parse.quote(str(batch_id), safe="")
    return path + "/" + action if action else path
