"""A stream of the topics' events (GET /api/v1/events, Server-Sent Events)
as a generator that connects again by itself (a part of Client)."""
import http.client
import json
import logging
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple

if TYPE_CHECKING:
    from gmq_client.client import GmqError

__all__ = ["EventCalls", "LOST"]

# LOST is the "type" of the event the generator yields when the broker said
# events were missed: the position resumed from is older than its buckets
# keep (about their last 10,000 events each). "buckets" names them, "error"
# says it; the stream goes on from the oldest event they keep.
LOST = "lost"

# DEFAULT_IDLE_TIMEOUT is how long a connection may stay silent (seconds)
# before it is taken for dead: the broker sends a keep-alive every 15 s.
DEFAULT_IDLE_TIMEOUT = 45.0

# FATAL: a refusal no retry mends (a 4xx but a timeout or "too many").
_RETRIED_4XX = (408, 429)

Event = Dict[str, Any]
"""An event: the broker's JSON ("type", "topic", "id" (the job's),
"internal_id", "attempt", "at" (RFC 3339), and "result", "error",
"progress" or "detail" when it carries one, "cut": True when that was cut
at 1 KiB), or a lost event ({"type": "lost", "buckets", "error"}), each
with "event_id": the stream's position after it (see events)."""


class _Lagging(Exception):
    """The broker ended the stream: its consumer fell behind."""


class EventCalls:
    """events (Client has it)."""

    if TYPE_CHECKING:  # Client's
        base: str
        token: Optional[str]

        def _retry_delay(self, attempt: int, retry_after: Optional[float]) -> float: ...

    def events(self, topics: Iterable[str], types: Optional[Iterable[str]] = None,
               last_event_id: Optional[str] = None, idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
               on_ready: Optional[Callable[[], None]] = None,
               logger: Optional[logging.Logger] = None) -> Iterator[Event]:
        """A generator of the events of topics (a list, or one topic's name)
        with events = true, of types (None: all) as they happen: dicts
        with the broker's fields and "event_id" (see Event).

        A connection that drops, stays silent for idle_timeout seconds, ends
        because the consumer fell behind (the broker's lagging event), or
        fails for want of a broker (no answer, 5xx, 429: max_waiting
        reached) is made again by itself, with the last event's "event_id"
        as Last-Event-ID, so that no event is missed or repeated: after a
        backoff of 0.1 s doubling up to the client's max_backoff (at once
        after falling behind). Events the broker no longer keeps come as one
        event of type LOST. A refusal no retry mends (400: an unknown type,
        a bad last_event_id; 401) raises GmqError. Until the first event
        comes, a reconnect starts from the broker's now.

        last_event_id (an event's "event_id") starts after that event;
        on_ready is called each time a connection is in place (the events
        that happen from then on come). Stop it with close(), or by leaving
        the loop: its connection is closed."""
        topics = [topics] if isinstance(topics, str) else list(topics)
        if not topics or idle_timeout <= 0:
            raise ValueError("gmq events: give at least one topic, and idle_timeout > 0")
        query = {"topics": ",".join(topics)}
        if types:
            query["types"] = ",".join([types] if isinstance(types, str) else types)
        path = "/api/v1/events?" + urllib.parse.urlencode(query)
        log = logger or logging.getLogger("gmq_client")
        return self._events(path, last_event_id, idle_timeout, on_ready, log)

    def _events(self, path: str, last: Optional[str], idle_timeout: float,
                on_ready: Optional[Callable[[], None]], log: logging.Logger) -> Iterator[Event]:
        """The generator: connects, yields, and connects again (see events)."""
        failures = 0
        while True:
            wait: Optional[float] = None
            try:
                with self._open_events(path, last, idle_timeout) as resp:
                    for name, event_id, data in _read(resp):
                        if event_id:
                            last = event_id
                        if name == "ready":
                            failures = 0
                            if on_ready is not None:
                                on_ready()
                        elif name == "lagging":
                            raise _Lagging(data)
                        elif name in ("", "message", LOST):
                            yield _event(name, event_id, data)
                why: Any = "the stream ended"
            except _Lagging as e:
                why, wait = "its consumer fell behind: %s" % e, 0.0
            except urllib.error.HTTPError as e:
                error = _http_error(e)
                if 400 <= error.status < 500 and error.status not in _RETRIED_4XX:
                    raise error from None
                why, wait = error, self._retry_delay(failures, error.retry_after)
            except (OSError, http.client.HTTPException, ValueError) as e:  # no answer, a cut, a silence, not SSE
                why = e
            if wait is None:
                wait = self._retry_delay(failures, None)
            failures += 1
            log.log(logging.INFO if wait == 0 else logging.WARNING,
                    "gmq events: %s; connecting again in %.1f s", why, wait)
            time.sleep(wait)

    def _open_events(self, path: str, last: Optional[str], idle_timeout: float) -> http.client.HTTPResponse:
        """One connection to the stream (its answer, a 200 of text/event-stream)."""
        headers = {"Accept": "text/event-stream", "Cache-Control": "no-cache"}
        from gmq_client.client import VERSION  # here: client.py imports this module

        headers["User-Agent"] = "gmq-python/" + VERSION
        if last:
            headers["Last-Event-ID"] = last
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        req = urllib.request.Request(self.base + path, headers=headers)
        resp: http.client.HTTPResponse = urllib.request.urlopen(req, timeout=idle_timeout)
        kind = resp.headers.get("Content-Type", "")
        if not kind.startswith("text/event-stream"):
            resp.close()
            raise ValueError("the answer is %r, not text/event-stream" % kind)
        return resp


def _read(resp: http.client.HTTPResponse) -> Iterator[Tuple[str, str, str]]:
    """The events of a Server-Sent Events stream (the HTML standard's
    format), as (name, id, data): the id kept from the last event that had
    one, as the standard says; comments (the keep-alive) skipped."""
    name, event_id, data = "", "", []  # type: str, str, List[str]
    while True:
        raw = resp.readline()
        if not raw:
            return
        line = raw.decode("utf-8").rstrip("\r\n")
        if line == "":
            if data:
                yield name, event_id, "\n".join(data)
            name, data = "", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "id" and "\0" not in value:
            event_id = value
        elif field == "event":
            name = value
        elif field == "data":
            data.append(value)


def _event(name: str, event_id: str, data: str) -> Event:
    """An event as the generator yields it."""
    event: Event = json.loads(data)
    if name == LOST:
        event["type"] = LOST
    event["event_id"] = event_id
    return event


def _http_error(e: urllib.error.HTTPError) -> "GmqError":
    from gmq_client.client import _error  # here: client.py imports this module

    return _error(e)
