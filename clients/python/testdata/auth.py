"""The token through the installed Python client: argv = base URL, topic,
token. Without it (or with a wrong one) the broker answers 401; with it
every call goes through, the worker's too. (Not token.py: a script of that
name would hide the standard library's token module.)"""
import sys

from gmq_client import Client, GmqError, Job

url, topic, token = sys.argv[1:4]


def refused(client: Client) -> None:
    try:
        client.push(topic, "x")
    except GmqError as e:
        assert e.status == 401, e
        return
    raise AssertionError("a push without the right token was stored")


refused(Client(url))
refused(Client(url, token="not-" + token))

c = Client(url, token=token)
job_id = c.push(topic, "hello", job_id="t-1", ttr=30)
job = c.pop([topic], timeout=1)
assert job is not None and job["id"] == job_id and job["body"] == "hello", job
c.touch(job_id, job["attempt"])
c.ack(job_id, job["attempt"])

c.push(topic, "for the worker")
seen = []


def handle(job: Job) -> None:
    seen.append(job["body"])
    worker.stop()


worker = c.worker([topic], handle, poll=1, handle_signals=False)
worker.run()
assert seen == ["for the worker"], seen
assert c.pop([topic], timeout=0) is None
print("ok")
