"""Cron schedules and releasing a unique key through the installed Python
client: argv = base URL, topic. Prints "ok"."""
import sys
import time

from gmq_client import Client, GmqError

c = Client(sys.argv[1])
topic = sys.argv[2]


def raises(status: int, call, *args, says: str = "", **kwargs) -> GmqError:
    try:
        call(*args, **kwargs)
    except GmqError as e:
        assert e.status == status and says in e.message, (e, status, says)
        return e
    raise AssertionError("%s%r: no error, want %d" % (call.__name__, args, status))


def drain() -> None:
    while True:
        job = c.pop(topic)
        if job is None:
            return
        c.ack(job["id"], job["attempt"])


# A schedule every second pushes its job; the schedule shows the fire.
s = c.set_schedule("tick", cron="* * * * * *", job={"topic": topic, "body": "tick", "TTR": 30, "priority": 7, "group": "clock"})
assert s["name"] == "tick" and s["tz"] == "UTC" and s["overlap"] == "allow" and not s["paused"] and "next" in s, s
assert s["job"] == {"topic": topic, "body": "tick", "TTR": 30, "priority": 7, "delay": 0, "group": "clock"}, s
job = c.pop(topic, timeout=3)
assert job is not None and job["body"] == "tick" and job["TTR"] == 30 and job["group"] == "clock", job
c.ack(job["id"], job["attempt"])
deadline = time.monotonic() + 3
while not (s["fires"] >= 1 and "last_id" in s and "last" in s):
    assert time.monotonic() < deadline, s
    time.sleep(0.05)
    s = c.schedule("tick")

# Paused: no next fire and no job from the cron; a fire now still pushes.
s = c.set_schedule("tick", paused=True)
assert s["paused"] and "next" not in s, s
drain()  # a fire may have come between the ack and the pause
assert c.pop(topic, timeout=1.5) is None
fired = c.fire_schedule("tick")
assert fired["id"] and fired["internal_id"] > 0, fired
job = c.pop(topic, timeout=1)
assert job is not None and job["id"] == fired["id"], (job, fired)
c.ack(job["id"], job["attempt"])
s = c.schedule("tick")
assert s["last_id"] == fired["id"] and "next" not in s, s

# Overlap skip: while the last fire's job waits, a fire now is a 409.
c.set_schedule("tick", overlap="skip")
first = c.fire_schedule("tick")
raises(409, c.fire_schedule, "tick", says="overlap skip")
job = c.pop(topic, timeout=1)
assert job is not None and job["id"] == first["id"], job
c.ack(job["id"], job["attempt"])
c.fire_schedule("tick")

# None takes a field out of the run-time layer: overlap back to allow.
s = c.set_schedule("tick", cron="0 0 1 1 *", overlap=None)
assert s["overlap"] == "allow" and s["cron"] == "0 0 1 1 *" and "overlap" not in s["run"], s
c.set_schedule("other", cron="@daily", tz="Europe/Berlin", job={"topic": topic, "body": "x"})
names = [(x["name"], x["tz"]) for x in c.schedules()]
assert names == [("other", "Europe/Berlin"), ("tick", "UTC")], names

# Deleted: every call on it is a 404.
c.delete_schedule("tick")
raises(404, c.schedule, "tick")
raises(404, c.delete_schedule, "tick")
raises(404, c.fire_schedule, "tick")

# A bad definition is a 400 that says what is wrong.
job = {"topic": topic, "body": "x"}
for kwargs, says in [({"job": job}, "cron is missing"), ({"cron": "@daily"}, "job is missing"),
                     ({"cron": "61 * * * *", "job": job}, "cron"), ({"cron": "@daily", "tz": "Mars/Olympus", "job": job}, "tz"),
                     ({"cron": "@daily", "job": job, "overlap": "never"}, "overlap"),
                     ({"cron": "@daily", "job": dict(job, id="a-1")}, '"id"'), ({}, "no field given")]:
    raises(400, c.set_schedule, "bad", says=says, **kwargs)
raises(400, c.set_schedule, "bad~name", cron="@daily", job=job)

# release_unique frees a held key (one with a slash and a space too): the
# next push with it is a new job. A key not held is a 404.
for key in ["user-42", "a/b c%"]:
    unique = {"key": key, "for": 3600}
    held = c.push(topic + "-mail", "hi", unique=unique)
    assert raises(409, c.push, topic + "-mail", "hi", unique=unique).held_by == held["id"]
    c.release_unique(topic + "-mail", key)
    again = c.push(topic + "-mail", "hi", unique=unique)
    assert again["id"] != held["id"], (held, again)
raises(404, c.release_unique, topic + "-mail", "nobody")
print("ok")
