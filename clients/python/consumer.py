"""Work on jobs from gmq with a worker loop, until SIGTERM or Ctrl-C (or -n jobs):
python3 consumer.py --url http://127.0.0.1:8000 --topic mail --concurrency 4
(the broker's token, if it has one, from $GMQ_TOKEN)."""
import argparse
import os
import threading

from gmq_client import Client, Job


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--url", default=os.environ.get("GMQ_URL", "http://127.0.0.1:8000"))
    p.add_argument("--topic", default="mail")
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("-n", type=int, default=0, help="stop after n jobs (0: never)")
    args = p.parse_args()
    client = Client(args.url, token=os.environ.get("GMQ_TOKEN"))
    lock = threading.Lock()
    done = 0

    def handle(job: Job) -> None:
        # The work. Returning acks the job; an exception fails it (it is
        # retried after its topic's backoff); a long one is touched for you.
        nonlocal done
        print("done %s: %s" % (job["id"], job["body"]), flush=True)
        with lock:
            done += 1
            if done == args.n:
                worker.stop()  # the jobs in hand finish, then run() returns

    worker = client.worker([args.topic], handle, concurrency=args.concurrency)
    worker.run()


if __name__ == "__main__":
    main()
