"""JSON bodies through the installed Python client: argv = base URL, topic.
A dict or list is pushed as a JSON object or array and pops back as one; a
string stays a string, even one holding JSON; a number or None is refused."""
import sys

from gmq_client import Client, GmqError

c = Client(sys.argv[1])
topic = sys.argv[2]
mail = {"to": "ada", "tags": ["new"], "n": 1.5, "ok": True, "none": None, "name": "Zoë"}
bodies = [mail, [1, "two", {}], '{"to":"ada"}', "[1, 2]", {}]
for body in bodies:
    c.push(topic, body)
c.push_batch([{"topic": topic, "body": {"batch": 1}}, {"topic": topic, "body": "plain"}])
for want in bodies:
    job = c.pop([topic], timeout=1)
    assert job is not None and job["body"] == want and type(job["body"]) is type(want), (job, want)
    c.ack(job["id"], job["attempt"])
jobs = c.pop_many([topic], 5, timeout=1)
assert [j["body"] for j in jobs] == [{"batch": 1}, "plain"], jobs
c.ack_many(jobs)

# A waiting job's body changed to JSON, and back to a string.
job_id = c.push(topic, "draft", delay=3600)
job = c.update(job_id, body={"final": True})
assert job["body"] == {"final": True}, job
job = c.update(job_id, body='{"final": true}')
assert job["body"] == '{"final": true}', job
job = c.update(job_id, delay=0, body=["last"])
popped = c.pop([topic], timeout=1)
assert popped is not None and popped["id"] == job_id and popped["body"] == ["last"], popped

# A schedule's job with a JSON body: shown and fired as one.
c.set_schedule("json-py", cron="0 0 1 1 *", job={"topic": topic, "body": {"kind": "yearly"}})
assert c.schedule("json-py")["job"]["body"] == {"kind": "yearly"}
c.fire_schedule("json-py")
popped = c.pop([topic], timeout=1)
assert popped is not None and popped["body"] == {"kind": "yearly"}, popped

for refused in (42, True, None):
    try:
        c.push(topic, refused)  # type: ignore[arg-type]
        raise AssertionError("a body of %r was stored" % (refused,))
    except GmqError as e:
        assert e.status == 400 and "body must be a string, an object or an array" in e.message, e
print("ok")
