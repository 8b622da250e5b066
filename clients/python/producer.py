"""Push jobs to gmq: python3 producer.py --url http://127.0.0.1:8000 --topic mail -n 10
(the broker's token, if it has one, from $GMQ_TOKEN)."""
import argparse
import os
import uuid

from gmq_client import Client


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--url", default=os.environ.get("GMQ_URL", "http://127.0.0.1:8000"))
    p.add_argument("--topic", default="mail")
    p.add_argument("-n", type=int, default=10)
    args = p.parse_args()
    client = Client(args.url, token=os.environ.get("GMQ_TOKEN"))
    half = args.n // 2
    for i in range(half):  # one by one, then the rest as one batch
        # An id of your own, made before the first try, makes retries safe: stored once.
        job_id = "%s-%s" % (args.topic, uuid.uuid4())
        print("pushed", client.push(args.topic, "job %d" % i, ttr=30, job_id=job_id))
    batch = [{"topic": args.topic, "body": "job %d" % i, "TTR": 30} for i in range(half, args.n)]
    if batch:
        for job_id in client.push_batch(batch):
            print("pushed", job_id)


if __name__ == "__main__":
    main()
