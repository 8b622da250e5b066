"""Cron schedules: python3 schedule.py --url http://127.0.0.1:8000 makes (or
updates) a daily report at 9:00 Berlin time, fires it once now, and lists
every schedule (the broker's token, if it has one, from $GMQ_TOKEN)."""
import argparse
import os

from gmq_client import Client, GmqError


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--url", default=os.environ.get("GMQ_URL", "http://127.0.0.1:8000"))
    args = p.parse_args()
    client = Client(args.url, token=os.environ.get("GMQ_TOKEN"))

    # Cron's five fields (or six, seconds first), read in tz. Overlap skip:
    # no new report while the last one still waits or is being made.
    s = client.set_schedule("daily-report", cron="0 9 * * *", tz="Europe/Berlin", overlap="skip",
                            job={"topic": "reports", "body": "daily", "TTR": 300})
    print("daily-report fires next at", s["next"])

    # Fire now: its job is pushed at once; its next fire stays.
    try:
        pushed = client.fire_schedule("daily-report")
        print("fired daily-report now: job", pushed["id"])
    except GmqError as e:
        if e.status != 409:
            raise
        print("the last report still waits")

    for s in client.schedules():
        print("%s: %r in %s, %d fires, %d skips, last job %s" % (
            s["name"], s["cron"], s["tz"], s["fires"], s["skips"], s.get("last_id")))


if __name__ == "__main__":
    main()
