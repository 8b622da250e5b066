"""gmq's Python client: the HTTP API (Client) and a worker loop (Worker),
standard library only (Python 3.8+).

    from gmq_client import Client
    c = Client("http://127.0.0.1:8000", token="...")  # token: the broker's [web] token, if set
    c.push("mail", "hello", delay=10, ttr=30)
    c.push("signup", {"user": "ada", "plan": "pro"})  # a dict or list: a JSON body, popped as one
    job = c.pop(["mail"], timeout=5)   # None when the time is up
    c.ack(job["id"], job["attempt"])

    c.worker(["mail"], lambda job: print(job["body"]), concurrency=4).run()

    order = c.pop(["orders"], timeout=5)  # an ack with follow-ups: jobs pushed once it succeeds, each once
    ids = c.ack(order["id"], order["attempt"], token=order["token"], push=[{"topic": "mail", "body": "shipped"}])
    # from a worker's handler: return gmq_client.Done(result=..., push=[...])

    extract = c.push("etl-extract", {"day": 5})  # workflows: a job that waits for others, and a batch
    c.push("etl-load", {"day": 5}, after=[extract], with_results=True, then=[{"topic": "mail", "body": "loaded"}])
    batch_id, ids = c.create_batch([{"topic": "parts", "body": "1"}], on_complete={"topic": "done", "body": "all"})

    c.set_schedule("heartbeat", cron="*/5 * * * * *", job={"topic": "beats", "body": "ping"})

    for event in c.events(["mail"], types=["completed", "dead"]):  # a topic with events = true
        print(event["type"], event["id"])
"""
from gmq_client.batches import Batch, CreatedBatch
from gmq_client.client import VERSION, Body, Client, GmqError, Job, Pushed
from gmq_client.events import LOST, Event
from gmq_client.schedules import Schedule, ScheduledJob
from gmq_client.webhook import WebhookVerificationError, verify_webhook
from gmq_client.worker import Done, Handler, Worker

__all__ = ["Batch", "Body", "Client", "CreatedBatch", "Done", "Event", "GmqError", "Handler", "Job", "LOST", "Pushed",
           "Schedule", "ScheduledJob", "WebhookVerificationError", "Worker", "verify_webhook"]
__version__ = VERSION
