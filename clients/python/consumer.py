"""Pop, work on and ack jobs from gmq, stopping after -n jobs or when none
came for --idle seconds:
python3 clients/python/consumer.py --url http://127.0.0.1:8000 --topic mail -n 10"""
import argparse

from gmq_client import Client


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--url", default="http://127.0.0.1:8000")
    p.add_argument("--topic", default="mail")
    p.add_argument("-n", type=int, default=10)
    p.add_argument("--idle", type=float, default=5)
    args = p.parse_args()
    c = Client(args.url)
    done = 0
    job = c.pop([args.topic], timeout=args.idle)
    while job is not None:
        # Long work would touch the job before its TTR runs out; a job that
        # cannot be done now would be released, or buried to look at later.
        c.touch(job["id"], job["attempt"])
        done += 1
        if done == args.n:
            c.ack(job["id"], job["attempt"])
            print("done %s: %s" % (job["id"], job["body"]))
            return
        # Ack this job and pop the next in one request.
        following = c.ack_and_pop(job["id"], job["attempt"], [args.topic], timeout=args.idle)
        print("done %s: %s" % (job["id"], job["body"]))
        job = following
    print("no job for", args.idle, "s")


if __name__ == "__main__":
    main()
