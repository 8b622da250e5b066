"""Events through the installed Python client: argv = base URL, topic, the
URL of a proxy to the broker whose POST /-/cut drops every connection
through it, and the topic's events bucket.

A generator of the topic's events, through the proxy, sees a job pushed,
reserved and completed with its result. Its connection is cut while it
is suspended after the reserved event; the ack and a push made meanwhile
come after it connects again with the last event's id, each once, and then
what follows. A position older than the bucket keeps comes as a lost
event, then the rest from the oldest kept; types filter; an unknown type
raises GmqError 400. Prints "ok"."""
import json
import logging
import queue
import sys
import threading
import urllib.request
from typing import Any, Iterator, List, Tuple

from gmq_client import LOST, Client, Event, GmqError

url, topic, proxy, bucket = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
logging.getLogger("gmq_client").addHandler(logging.NullHandler())  # the reconnect's warning: the output is "ok" alone
c = Client(url)


def call(method: str, to: str, payload: Any = None) -> Any:
    """An HTTP call the client has none for (a topic's settings, the proxy's cut)."""
    data = json.dumps(payload).encode() if payload is not None else b""
    req = urllib.request.Request(to, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as resp:
        return json.loads(resp.read() or b"null")


class Pulled:
    """A generator pulled on a thread of its own, one event when asked: it
    is suspended in between, as a consumer busy with an event holds it."""

    def __init__(self, events: Iterator[Event]) -> None:
        self._asks: "queue.Queue[bool]" = queue.Queue()
        self._got: "queue.Queue[Tuple[bool, Any]]" = queue.Queue()
        self._pending = False
        threading.Thread(target=self._run, args=(events,), daemon=True).start()

    def _run(self, events: Iterator[Event]) -> None:
        while self._asks.get():
            try:
                self._got.put((True, next(events)))
            except BaseException as e:  # noqa: BLE001 - handed to the asker
                self._got.put((False, e))
                return

    def ask(self) -> None:
        """Start the next pull, unless one is under way."""
        if not self._pending:
            self._pending = True
            self._asks.put(True)

    def next(self) -> Event:
        """The next event, within 10 s."""
        self.ask()
        ok, got = self._got.get(timeout=10)
        self._pending = False
        if not ok:
            raise got
        return got


def expect(event: Event, kind: str, job_id: str, attempt: int) -> Event:
    assert event["type"] == kind and event["topic"] == topic and event["id"] == job_id, event
    assert event["attempt"] == attempt and event["internal_id"] and event["at"] and event["event_id"], event
    return event


call("PUT", "%s/api/v1/topics/%s/config" % (url, topic), {"events": True})

# Pushed, reserved, then the connection cut: completed and the next push come after the reconnect.
readies: "queue.Queue[int]" = queue.Queue()
events = Pulled(Client(proxy).events([topic], on_ready=lambda: readies.put(1)))
events.ask()
readies.get(timeout=10)
c.push(topic, "hi", job_id="m-1", ttr=30)
expect(events.next(), "pushed", "m-1", 0)
job = c.pop([topic], timeout=1)
assert job is not None and job["id"] == "m-1", job
expect(events.next(), "reserved", "m-1", 1)
assert call("POST", proxy + "/-/cut") == {"cut": 1}
c.ack("m-1", job["attempt"], token=job["token"], result={"url": "/r/m-1"})
c.push(topic, "hi", job_id="m-2", ttr=30)
completed = expect(events.next(), "completed", "m-1", 1)
assert completed["result"] == {"url": "/r/m-1"}, completed
expect(events.next(), "pushed", "m-2", 0)
c.push(topic, "hi", job_id="m-3", ttr=30)
expect(events.next(), "pushed", "m-3", 0)
assert readies.qsize() == 1, "connected %d times; want twice" % (readies.qsize() + 1)

# Lost: a position older than the bucket keeps; then completed only, from the oldest kept.
seen: List[Event] = []
for event in c.events(topic, types=["completed"], last_event_id="%d:1-0" % bucket):
    seen.append(event)
    if len(seen) == 2:
        break
assert seen[0]["type"] == LOST and seen[0]["buckets"] == [bucket] and seen[0]["error"] and seen[0]["event_id"], seen
expect(seen[1], "completed", "m-1", 1)

try:
    next(c.events([topic], types=["bogus"]))
    raise AssertionError("an unknown type was taken")
except GmqError as e:
    assert e.status == 400, e
print("ok")
