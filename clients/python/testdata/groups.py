"""Fair groups through the installed Python client: argv = base URL, topic.
Prints "ok"."""
import json
import sys
import urllib.request

from gmq_client import Client, GmqError

c = Client(sys.argv[1])
topic = sys.argv[2]

# tenant-a has three jobs, tenant-b two: the pops take the groups in turn,
# priority ordering a group's own jobs, and each job shows its group.
c.push(topic, "a3", priority=30, group="tenant-a")
c.push(topic, "a1", priority=10, group="tenant-a")
c.push(topic, "b1", priority=50, group="tenant-b", unique={"key": "b1", "for": 60})
c.push_batch([{"topic": topic, "body": "a2", "priority": 20, "group": "tenant-a"},
              {"topic": topic, "body": "b2", "priority": 60, "group": "tenant-b", "id": "b-2"}])
with urllib.request.urlopen(sys.argv[1] + "/api/v1/jobs/b-2") as resp:  # the client has no get
    assert json.load(resp)["group"] == "tenant-b"
popped = []
for _ in range(5):
    job = c.pop([topic], timeout=1)
    assert job is not None, popped
    popped.append("%s/%s" % (job.get("group"), job["body"]))
assert popped == ["tenant-a/a1", "tenant-b/b1", "tenant-a/a2", "tenant-b/b2", "tenant-a/a3"], popped

# pop_many's jobs carry their groups; a job without one has no "group".
c.push(topic + "-mail", "x", group="tenant-\u00e9")
c.push(topic + "-mail", "y")
jobs = {j["body"]: j for j in c.pop_many([topic + "-mail"], 2, timeout=1)}
assert jobs["x"]["group"] == "tenant-\u00e9" and "group" not in jobs["y"], jobs

# A bad group is a 400 naming it; 200 bytes is good.
for bad in ["g" * 201, "tenant\n42", "tenant\x7f"]:
    try:
        c.push(topic, "x", group=bad)
        raise AssertionError("pushed with the group %r" % bad)
    except GmqError as e:
        assert e.status == 400 and "group" in e.message, e
assert c.push(topic + "-long", "x", group="g" * 200)
print("ok")
