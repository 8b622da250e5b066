"""A client for gmq's HTTP API, standard library only (Python 3.8+).

    from gmq_client import Client
    c = Client("http://127.0.0.1:8000")
    c.push("mail", "hello", delay=10, ttr=30)
    job = c.pop(["mail"], timeout=5)   # None when the time is up
    c.ack(job["id"], job["attempt"])
"""
import json
import urllib.error
import urllib.parse
import urllib.request


class GmqError(Exception):
    """An answer from gmq that is not a success: status and gmq's reason."""

    def __init__(self, status, message):
        super().__init__("gmq: %d: %s" % (status, message))
        self.status = status
        self.message = message


class Client:
    def __init__(self, base_url="http://127.0.0.1:8000", timeout=10.0):
        self.base = base_url.rstrip("/")
        self.timeout = timeout  # added to a long poll's own wait

    def push(self, topic, body, delay=0, ttr=None, priority=None, job_id=None, retry=None):
        """Store a job; returns its id. retry is the job's own retry policy
        ({"max_attempts", "backoff", "base", "max", "jitter"}), else its topic's."""
        job = _job(topic, body, delay, ttr, priority, job_id)
        if retry is not None:
            job["retry"] = retry
        return self._call("POST", "/api/v1/jobs", job)["id"]

    def push_batch(self, jobs):
        """Store several jobs (dicts with topic, body and optional delay, TTR,
        priority, id): all, or on bad input none. Returns their ids."""
        return self._call("POST", "/api/v1/jobs/batch", {"jobs": jobs})["ids"]

    def pop(self, topics, timeout=0):
        """Reserve a job from the first listed topic that has one, waiting up
        to timeout seconds. Returns the job (a dict), or None."""
        return self._call("POST", "/api/v1/pop", {"topics": list(topics), "timeout": timeout}, wait=timeout)

    def ack(self, job_id, attempt=0):
        """Finish a popped job; attempt fences the ack to that delivery."""
        self._call("POST", _job_path(job_id, "ack"), {"attempt": attempt})

    def ack_and_pop(self, job_id, attempt, topics, timeout=0):
        """Finish a popped job and pop the next in the same request, waiting
        up to timeout seconds. Returns the next job, or None. If the ack fails
        (GmqError), nothing was popped."""
        payload = {"attempt": attempt, "next": {"topics": list(topics), "timeout": timeout}}
        return self._call("POST", _job_path(job_id, "ack"), payload, wait=timeout)

    def pop_many(self, topics, count, timeout=0):
        """Reserve up to count jobs: wait up to timeout seconds for one, then
        take as many as are ready. Returns a list (empty when none came)."""
        payload = {"topics": list(topics), "count": count, "timeout": timeout}
        answer = self._call("POST", "/api/v1/pop", payload, wait=timeout)
        return answer["jobs"] if answer else []

    def ack_many(self, jobs, topics=None, count=0, timeout=0):
        """Finish popped jobs (each fenced by its attempt) in one request and,
        with count > 0, pop up to count more. Returns the answer: "acked"
        (ids), "failed" ([{"id", "status", "error"}]) and, with count, "jobs"."""
        payload = {"jobs": [{"id": j["id"], "attempt": j.get("attempt", 0)} for j in jobs]}
        if count > 0:
            payload["next"] = {"topics": list(topics or []), "count": count, "timeout": timeout}
        return self._call("POST", "/api/v1/ack", payload, wait=timeout)

    def fail(self, job_id, attempt=0, error=""):
        """Report that a popped job failed, with why: it waits its retry
        policy's backoff, or goes to its topic's dead set past max_attempts.
        Returns the job as it now is (state "delayed" or "dead")."""
        return self._call("POST", _job_path(job_id, "fail"), {"attempt": attempt, "error": error})

    def fail_many(self, jobs, error=""):
        """Report several failures in one request (each fenced by its
        attempt). Returns "jobs" (as they now are) and "failed"
        ([{"id", "status", "error"}])."""
        payload = {"jobs": [{"id": j["id"], "attempt": j.get("attempt", 0), "error": error} for j in jobs]}
        return self._call("POST", "/api/v1/fail", payload)

    def release(self, job_id, attempt=0, delay=0, priority=None):
        """Give a popped job back, ready again after delay seconds."""
        args = {"attempt": attempt, "delay": delay}
        if priority is not None:
            args["priority"] = priority
        return self._call("POST", _job_path(job_id, "release"), args)

    def bury(self, job_id, attempt=0, priority=None):
        """Park a popped job until it is kicked."""
        args = {"attempt": attempt}
        if priority is not None:
            args["priority"] = priority
        return self._call("POST", _job_path(job_id, "bury"), args)

    def touch(self, job_id, attempt=0):
        """Give a popped job a fresh TTR."""
        return self._call("POST", _job_path(job_id, "touch"), {"attempt": attempt})

    def _call(self, method, path, payload, wait=0):
        data = json.dumps(payload).encode("utf-8")
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout + wait) as resp:
                if resp.status == 204:
                    return None
                return json.loads(resp.read().decode("utf-8"))
        except urllib.error.HTTPError as e:
            text = e.read().decode("utf-8", "replace")
            try:
                message = json.loads(text)["error"]
            except (ValueError, KeyError, TypeError):
                message = text
            raise GmqError(e.code, message) from None


def _job(topic, body, delay, ttr, priority, job_id):
    job = {"topic": topic, "body": body, "delay": delay}
    if ttr is not None:
        job["TTR"] = ttr
    if priority is not None:
        job["priority"] = priority
    if job_id is not None:
        job["id"] = job_id
    return job


def _job_path(job_id, action):
    return "/api/v1/jobs/%s/%s" % (urllib.parse.quote(str(job_id), safe=""), action)
