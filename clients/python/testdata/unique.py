"""Unique pushes through the installed Python client: argv = base URL, topic.
Prints "ok"."""
import sys

from gmq_client import Client, GmqError

c = Client(sys.argv[1])
topic = sys.argv[2]

# The key taken: the push's answer; a second push with it (reject) is a 409 naming the holder.
first = c.push(topic, "hi", job_id="welcome-42", unique={"key": "user-42", "for": 600})
assert first["id"] == "welcome-42" and first["internal_id"] > 0 and "unique" not in first, first
try:
    c.push(topic, "hi again", unique={"key": "user-42", "for": 600, "mode": "reject"})
    raise AssertionError("a held key was pushed")
except GmqError as e:
    assert e.status == 409 and e.held_by == "welcome-42", (e, e.body)

# Replace and debounce change the waiting job that holds the key, and name it.
daily = {"key": "daily", "for": 600, "mode": "replace"}
report = c.push(topic + "-reports", "v1", delay=3600, unique=daily)
again = c.push(topic + "-reports", "v2", job_id="not-used", unique=daily)
assert again["id"] == report["id"] and again["unique"] == "replaced", again
job = c.pop([topic + "-reports"], timeout=1)
assert job is not None and job["id"] == report["id"] and job["body"] == "v2", job
debounce = {"key": "index", "for": 60, "mode": "debounce"}
index = c.push(topic + "-index", "x", delay=5, unique=debounce)
moved = c.push(topic + "-index", "x", delay=5, unique=debounce)
assert moved == {"id": index["id"], "internal_id": index["internal_id"], "unique": "debounced"}, moved

# A reserved holder is not changed: a fresh job takes the key.
fresh = c.push(topic + "-reports", "v3", unique=daily)
assert fresh["id"] != report["id"] and "unique" not in fresh, fresh

# Bad input is a 400 that says what is wrong; a batch may not repeat a key.
for bad, says in [({"key": "k"}, "for is missing"), ({"key": "k", "for": 60, "mode": "sometimes"}, "reject, replace or debounce")]:
    try:
        c.push(topic, "x", unique=bad)
        raise AssertionError("pushed with %r" % bad)
    except GmqError as e:
        assert e.status == 400 and says in e.message and e.held_by is None, e
try:
    c.push_batch([{"topic": topic, "body": b, "unique": {"key": "k", "for": 60}} for b in "ab"])
    raise AssertionError("a batch repeating a key was pushed")
except GmqError as e:
    assert e.status == 400, e
print("ok")
