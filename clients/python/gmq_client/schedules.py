"""Cron schedules: their calls (a part of Client) and the shape gmq shows
them in. A schedule lives in gmq's Redis and every broker fires it, each
fire once: it pushes its job at each fire of its cron expression."""
import urllib.parse
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, TypedDict, Union

__all__ = ["KEEP", "Schedule", "ScheduledJob"]

# KEEP is set_schedule's default for a field it leaves as it is (None
# takes a field back to conf.ini's instead).
KEEP: Any = object()


class ScheduledJob(TypedDict, total=False):
    """What each fire pushes, as gmq shows it (its retry policy and unique
    key, if it has them, are in the schedule's "file" and "run")."""

    topic: str
    body: Union[str, Dict[str, Any], List[Any]]  # as given: a str, or a dict or list (a JSON object or array)
    priority: int
    TTR: float  # seconds
    delay: float  # seconds
    group: str  # its fair group, when it has one


class _Shown(TypedDict):
    """The fields gmq always shows of a schedule."""

    name: str
    cron: str  # five fields, or six with seconds first; @daily, @every 1h30m
    tz: str  # the IANA zone the fields are read in ("UTC" when none was set)
    job: ScheduledJob
    overlap: str  # "allow" or "skip"
    paused: bool
    fires: int  # fires that pushed a job (a fire_schedule counts as a fire)
    skips: int  # fires that overlap "skip" held back
    refused: int  # fires whose push the topic refused (full, too big, a unique key held)
    lateness_seconds: float  # how late its fires were, summed (Redis's clock)
    file: Dict[str, Any]  # conf.ini's [schedule.NAME], as fields ({} for none)
    run: Dict[str, Any]  # the run-time layer over it (what set_schedule sets)


class Schedule(_Shown, total=False):
    """A cron schedule as gmq shows it. The times are RFC 3339, in UTC."""

    next: str  # its next fire; absent while it is paused
    last: str  # its last fire that pushed a job
    last_id: str  # that job's id


class ScheduleCalls:
    """The calls of cron schedules, and of unique keys (Client has them)."""

    if TYPE_CHECKING:  # Client's, which every call goes through
        def _call(self, method: str, path: str, payload: Any, wait: float = 0,
                  settled_by: Optional[Callable[[Any], bool]] = None) -> Any: ...

    def schedules(self) -> List[Schedule]:
        """Every schedule, by name."""
        return list(self._call("GET", "/api/v1/schedules", None)["schedules"])

    def schedule(self, name: str) -> Schedule:
        """One schedule; GmqError 404 when there is none."""
        return self._call("GET", _schedule_path(name), None)

    def set_schedule(self, name: str, *, cron: Optional[str] = KEEP, tz: Optional[str] = KEEP,
                     job: Optional[Mapping[str, Any]] = KEEP, overlap: Optional[str] = KEEP,
                     paused: Optional[bool] = KEEP) -> Schedule:
        """Make schedule name, or change it; returns it as it now is. Each
        field given lies over its run-time layer; those left out stay, and
        None takes one back to conf.ini's [schedule.NAME] (or its default).
        A new schedule needs cron and job.

        cron is five fields (minute hour day-of-month month day-of-week), or
        six with seconds first, or @hourly, @daily, @every 1h30m; tz the
        IANA zone it is read in ("Europe/Berlin"; UTC when none); job what
        each fire pushes: a push's fields (topic, body: a string, a dict or a
        list, delay, TTR, priority, retry, unique, group), but no id; overlap "allow" (every
        fire pushes) or "skip" (a fire while the last fire's job still waits
        or is reserved pushes nothing, and counts a skip); paused True stops
        the fires until False. Its next fire is counted from now.

        A bad definition raises GmqError 400, whose message says what is
        wrong; a field gmq does not know is named, not dropped."""
        given = (("cron", cron), ("tz", tz), ("job", job), ("overlap", overlap), ("paused", paused))
        changes = {field: (dict(value) if field == "job" and value is not None else value)
                   for field, value in given if value is not KEEP}
        return self._call("PUT", _schedule_path(name), changes)

    def delete_schedule(self, name: str) -> None:
        """Remove schedule name (one of conf.ini's comes back at the broker's
        next reload); GmqError 404 when there is none. A retry that gets 404
        was answered by an earlier try: taken as deleted."""
        self._call("DELETE", _schedule_path(name), None, settled_by=_not_found)

    def fire_schedule(self, name: str) -> Dict[str, Any]:
        """Push schedule name's job now, outside its cron: counted as its last
        fire, its next fire unchanged (a paused schedule fires too). Returns
        {"id", "internal_id"} of the job. GmqError 404 when there is none,
        409 when its overlap is "skip" and its last job still waits or is
        reserved (counted as a skip), or when its job's unique key is held.

        A fire is not safe to repeat: a retry after a 503 may fire it twice
        (under overlap "skip" the retry raises the 409 instead)."""
        return dict(self._call("POST", _schedule_path(name) + "/fire", None))

    def release_unique(self, topic: str, key: str) -> None:
        """Free topic's unique key before its window ends, whatever became of
        the job that took it: the next push with the key makes a new job.
        GmqError 404 when the key is not held (a retry that gets 404 was
        answered by an earlier try: taken as released)."""
        path = "/api/v1/topics/%s/unique/%s" % (urllib.parse.quote(topic, safe=""), urllib.parse.quote(key, safe=""))
        self._call("DELETE", path, None, settled_by=_not_found)


def _not_found(e: Any) -> bool:
    """Whether a retried delete's error says an earlier try did it: 404."""
    return bool(e.status == 404)


def _schedule_path(name: str) -> str:
    return "/api/v1/schedules/" + urllib.parse.quote(name, safe="")
