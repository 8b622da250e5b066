"""Unique pushes: python3 unique.py --url http://127.0.0.1:8000 queues one
digest of ada's messages, updated while it waits, and her signup mail once a
day, however often it runs (the broker's token, if it has one, from $GMQ_TOKEN)."""
import argparse
import os

from gmq_client import Client, GmqError


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--url", default=os.environ.get("GMQ_URL", "http://127.0.0.1:8000"))
    args = p.parse_args()
    client = Client(args.url, token=os.environ.get("GMQ_TOKEN"))

    # Replace: while the digest waits (its minute's delay), a push gives it
    # the latest body rather than queueing a second digest.
    pushed = client.push("digest", "ada: 3 new messages", delay=60,
                         unique={"key": "digest-ada", "for": 600, "mode": "replace"})
    if pushed.get("unique") == "replaced":
        print("updated the waiting digest", pushed["id"])
    else:
        print("queued the digest", pushed["id"])

    # Reject (the default): while the key is held, a push raises 409 naming
    # the job that holds it (which may be done already).
    try:
        client.push("signup", "ada@example.com", unique={"key": "signup-ada", "for": 86400})
        print("queued the signup mail")
    except GmqError as e:
        if e.held_by is None:
            raise
        print("the signup mail is job", e.held_by, "already")


if __name__ == "__main__":
    main()
