"""Long polls past the broker's request_timeout through the installed Python
client: argv = base URL, topic, wait (seconds). Every waiting call must come
back empty after the whole wait, not fail."""
import sys
import time

from gmq_client import Client, Job

c = Client(sys.argv[1])
topic, wait = sys.argv[2], float(sys.argv[3])


def waited(name, call, empty):
    start = time.monotonic()
    got = call()
    took = time.monotonic() - start
    assert got == empty, (name, got)
    assert took >= wait - 0.05, (name, "came back after", took)


def held() -> Job:
    c.push(topic + "-held", "x")
    job = c.pop([topic + "-held"], timeout=1)
    assert job is not None
    return job


waited("pop", lambda: c.pop([topic], timeout=wait), None)
waited("pop_many", lambda: c.pop_many([topic], 3, timeout=wait), [])
job = held()
waited("ack_and_pop", lambda: c.ack_and_pop(job["id"], job["attempt"], [topic], timeout=wait), None)
job = held()
waited("ack_many", lambda: c.ack_many([job], [topic], count=2, timeout=wait)["jobs"], [])
print("ok")
