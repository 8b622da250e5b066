"""The JSON shapes of gmq's HTTP API built from the client's arguments, and
small readers of its answers: the client's helpers, not its interface."""
import json
import math
import re
import secrets
import urllib.parse
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set

# SETTLED is what Client._call returns when a retry's error says an earlier
# try of the same request went through (its answer was lost).
SETTLED: Any = object()


def seconds(value: Optional[str]) -> Optional[float]:
    """Retry-After in seconds; None when absent or an HTTP date (gmq sends seconds)."""
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def can_skip(pending: List[Dict[str, Any]], stored: List[str]) -> bool:
    """Whether a batch push can be retried without the stored jobs: none
    was stored, or every job has a client id to match them by."""
    return not stored or all(j.get("id") for j in pending)


def merge_ids(jobs: Sequence[Mapping[str, Any]], stored: Set[str], ids: List[str]) -> List[str]:
    """The ids of a batch in its order, from the ids an earlier try stored
    and those of the last try (which sent the other jobs, in order)."""
    rest = iter(ids)
    return [str(j["id"]) if j.get("id") in stored else str(next(rest)) for j in jobs]


def push_fields(topic: str, body: Any, delay: float, ttr: Optional[float], priority: Optional[int],
                job_id: Optional[str], retry: Optional[Mapping[str, Any]], unique: Optional[Mapping[str, Any]],
                group: Optional[str], keep_completed: Optional[float],
                timeout: Optional[float] = None) -> Dict[str, Any]:
    """A pushed job's fields, those given (push's arguments)."""
    job: Dict[str, Any] = {"topic": topic, "body": body, "delay": delay}
    given = (("TTR", ttr), ("priority", priority), ("id", job_id), ("group", group), ("keep_completed", keep_completed),
             ("timeout", timeout))
    job.update((name, value) for name, value in given if value is not None)
    if retry is not None:
        job["retry"] = dict(retry)
    if unique is not None:
        job["unique"] = dict(unique)
    return job


def workflow_fields(after: Optional[Sequence[str]], on_dependency_failure: Optional[str], with_results: bool,
                    then: Optional[Sequence[Mapping[str, Any]]],
                    on_dead: Optional[Sequence[Mapping[str, Any]]]) -> Dict[str, Any]:
    """A pushed job's workflow fields, those given (push's arguments): the
    jobs it waits for, and the follow-ups it pushes when it completes or
    dies (gmq's docs/workflows.md)."""
    if isinstance(after, str):
        raise TypeError("gmq: after is a list of job ids, not one id")
    job: Dict[str, Any] = {}
    if after is not None:
        job["after"] = [str(i) for i in after]
    if on_dependency_failure is not None:
        job["on_dependency_failure"] = on_dependency_failure
    if with_results:
        job["with_results"] = True
    if then is not None:
        job["then"] = [dict(j) for j in then]
    if on_dead is not None:
        job["on_dead"] = [dict(j) for j in on_dead]
    return job


def stored_as(job_id: str) -> Callable[[Any], bool]:
    """Whether a retried push's error (a GmqError) says an earlier try
    stored job_id: a 409 for the id (it names no holder), or a unique
    push's 409 naming job_id as the job that holds the key. Another holder
    is another job, and a 409 for a dependency that failed ("after: job N
    is dead") says nothing of the id."""
    return lambda e: e.status == 409 and e.held_by in (None, job_id) and "after: job " not in e.message


def delivery(attempt: Any, token: Any) -> Dict[str, Any]:
    """The fields of a call on a popped job's delivery: its attempt, and its
    token when there is one (a broker too old to hand one out gives none)."""
    args: Dict[str, Any] = {"attempt": attempt}
    if token:
        args["token"] = token
    return args


def job_path(job_id: str, action: str = "") -> str:
    """The URL of a job, or of an action on it."""
    path = "/api/v1/jobs/" + urllib.parse.quote(str(job_id), safe="")
    return path + "/" + action if action else path


def checked_result(result: Any) -> Any:
    """An ack's result, checked to be sendable as JSON: json.dumps raises its
    TypeError (a type JSON has no value of) or ValueError (a cycle, NaN or
    an infinity, or a lone surrogate, which gmq would refuse) before any
    request is sent."""
    json.dumps(result, allow_nan=False)
    why = unreadable(result)
    if why is not None:
        raise ValueError("the result " + why)
    return result


def unreadable(value: Any) -> Optional[str]:
    """Why a decoded JSON value is not what was sent, or None: a string
    holding a lone UTF-16 surrogate (json.loads keeps "\\ud800" as one, a
    str no UTF-8 can write), an infinity (a number past a double, read as
    inf), or _TOO_DEEP (loads). gmq refuses all three since issue 49; a job
    stored before may hold one."""
    if isinstance(value, str):
        if value == _TOO_DEEP:
            return _NESTS_TOO_DEEP
        if _SURROGATE.search(value):
            return "holds a lone UTF-16 surrogate escape"
    elif isinstance(value, float):
        if math.isinf(value) or math.isnan(value):
            return "holds a number past a double"
    elif isinstance(value, dict):
        for k, v in value.items():
            why = unreadable(k) or unreadable(v)
            if why is not None:
                return why
    elif isinstance(value, list):
        for v in value:
            why = unreadable(v)
            if why is not None:
                return why
    return None


_SURROGATE = re.compile("[\ud800-\udfff]")
_NESTS_TOO_DEEP = "nests objects and arrays too deep for json.loads"


def loads(text: str) -> Any:
    """json.loads of an answer of gmq's. A value in it nested so deep that
    json.loads raises RecursionError (a job stored before issue 49's 64-deep
    bound, such as a webhook's answer kept as a follow-up's body) is read as
    _TOO_DEEP, which mark_undecodable marks, instead of failing the whole
    pop: an answer that raised would leave its jobs reserved until their
    TTR, again and again."""
    try:
        return json.loads(text)
    except RecursionError:
        return json.loads(_cut_deep(text))


# _TOO_DEEP stands in for a value nested past _DEEPEST (random, so that no
# job's own text is taken for it). gmq's answers nest a few levels around
# bodies and results of at most 64.
_TOO_DEEP = "gmq: nested too deep to decode " + secrets.token_hex(8)
_DEEPEST = 128
_BRACKET_OR_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[][{}]', re.S)


def _cut_deep(text: str) -> str:
    """text (well-formed JSON) with each object or array that opens past
    _DEEPEST replaced by the JSON string _TOO_DEEP."""
    out: List[str] = []
    depth, start, cut = 0, 0, 0
    for m in _BRACKET_OR_STRING.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth == _DEEPEST + 1:
                cut = m.start()
        elif c in "]}":
            if depth == _DEEPEST + 1:
                out += [text[start:cut], json.dumps(_TOO_DEEP)]
                start = m.end()
            depth -= 1
    out.append(text[start:])
    return "".join(out)


def mark_undecodable(answer: Any) -> Any:
    """An answer with its popped jobs (the answer itself when it has an id
    and a token, or each of its "jobs") whose body cannot be read as sent
    (unreadable) marked: body None and "decode_error" saying why, so that
    the caller fails the job by its id, attempt and token (the worker does)."""
    if not isinstance(answer, dict):
        return answer
    jobs = [answer] if "id" in answer and "token" in answer else []
    if isinstance(answer.get("jobs"), list):
        jobs += [j for j in answer["jobs"] if isinstance(j, dict) and "token" in j]
    for job in jobs:
        try:
            why = unreadable(job.get("body"))
        except RecursionError:  # json.loads read it, with little stack to spare
            why = _NESTS_TOO_DEEP
        if why is not None:
            job["body"] = None
            job["decode_error"] = "gmq: cannot decode the job: its body " + why + \
                " (gmq refuses them since issue 49, so the job was stored before)"
    return answer
