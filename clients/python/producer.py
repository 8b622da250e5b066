"""Push jobs to gmq: python3 clients/python/producer.py --url http://127.0.0.1:8000 --topic mail -n 10"""
import argparse

from gmq_client import Client


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--url", default="http://127.0.0.1:8000")
    p.add_argument("--topic", default="mail")
    p.add_argument("-n", type=int, default=10)
    args = p.parse_args()
    c = Client(args.url)
    half = args.n // 2
    for i in range(half):  # one by one, then the rest as one batch
        print("pushed", c.push(args.topic, "job %d" % i, ttr=30))
    batch = [{"topic": args.topic, "body": "job %d" % i, "TTR": 30} for i in range(half, args.n)]
    if batch:
        for job_id in c.push_batch(batch):
            print("pushed", job_id)


if __name__ == "__main__":
    main()
