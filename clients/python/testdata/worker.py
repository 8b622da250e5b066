"""A worker of the installed Python client, for the tests to drive and
watch: argv = base URL, topic, then options. It prints "started ID ATTEMPT"
when its handler begins a job and "finished ID" when the handler is done
(before the ack), and "stopped" when run() returned, each line at once;
"pushed ID" first with --push-timeout."""
import argparse
import logging
import sys
import threading
import time

from gmq_client import Client, Job


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("url")
    p.add_argument("topic")
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--poll", type=float, default=1)
    p.add_argument("--sleep", type=float, default=0, help="seconds each job takes")
    p.add_argument("--fail", help="raise ValueError(FAIL) in the handler")
    p.add_argument("--together", type=int, default=0, help="the first N jobs wait until all N run at once")
    p.add_argument("--expect", type=int, default=0, help="stop after N jobs (0: run until a signal)")
    p.add_argument("--timeout", type=float, default=None, help="the worker's timeout, seconds")
    p.add_argument("--until-stopped", action="store_true", help="the handler waits for its stop event")
    p.add_argument("--push-timeout", type=float, default=None,
                   help="first push a job with this timeout of its own, and print \"pushed ID\"")
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)

    lock = threading.Lock()
    counts = {"started": 0, "done": 0}
    together = threading.Barrier(args.together, timeout=10) if args.together else None

    def say(line: str) -> None:
        with lock:
            print(line, flush=True)

    def count(what: str) -> int:
        with lock:
            counts[what] += 1
            return counts[what]

    def handle(job: Job, stop: threading.Event) -> None:
        say("started %s %d" % (job["id"], job["attempt"]))
        try:
            if together is not None and count("started") <= args.together:
                together.wait()  # raises BrokenBarrierError unless all of them run at once
            if args.until_stopped:
                stop.wait(60)  # set by the worker's timeout
            time.sleep(args.sleep)
            if args.fail:
                raise ValueError(args.fail)
        finally:
            say("finished %s" % job["id"])
            if count("done") == args.expect:
                worker.stop()

    if args.push_timeout is not None:
        say("pushed %s" % Client(args.url).push(args.topic, "x", ttr=30, timeout=args.push_timeout))
    worker = Client(args.url).worker([args.topic], handle, concurrency=args.concurrency, poll=args.poll,
                                     timeout=args.timeout)
    worker.run()
    say("stopped")


if __name__ == "__main__":
    main()
