"""Print how the jobs of a topic end, as they end, until Ctrl-C (or --count
of them): python3 events.py --url http://127.0.0.1:8000 --topic exports
The topic needs events = true (conf.ini's [topic.exports], or PUT
/api/v1/topics/exports/config {"events": true}); the broker's token, if it
has one, from $GMQ_TOKEN."""
import argparse
import os

from gmq_client import LOST, Client


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--url", default=os.environ.get("GMQ_URL", "http://127.0.0.1:8000"))
    p.add_argument("--topic", default="exports")
    p.add_argument("--count", type=int, default=0, help="stop after this many ends (0: never)")
    args = p.parse_args()
    client = Client(args.url, token=os.environ.get("GMQ_TOKEN"))

    # A generator that connects again by itself, resuming after its last event.
    events = client.events([args.topic], types=["completed", "dead"],
                           on_ready=lambda: print("watching", args.topic, flush=True))
    ends = 0
    try:
        for event in events:
            if event["type"] == LOST:
                print("some events were missed:", event["error"], flush=True)
                continue
            if event["type"] == "completed":
                print("job %s completed: %s" % (event["id"], event.get("result")), flush=True)
            else:
                print("job %s died: %s" % (event["id"], event.get("error")), flush=True)
            ends += 1
            if ends == args.count:
                break  # leaving the loop closes the stream
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
