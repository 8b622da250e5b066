"""Push a report job that gmq keeps an hour once it is done, make it with a
worker whose handler returns a result, and read the result back:
python3 report.py --url http://127.0.0.1:8000
(the broker's token, if it has one, from $GMQ_TOKEN)."""
import argparse
import os
from typing import Any, Dict

from gmq_client import Client, Job


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--url", default=os.environ.get("GMQ_URL", "http://127.0.0.1:8000"))
    args = p.parse_args()
    client = Client(args.url, token=os.environ.get("GMQ_TOKEN"))

    # keep_completed (seconds) keeps this job an hour after its ack, with its
    # result, whatever the topic's keep_completed says.
    job_id = client.push("exports", {"user": 42}, keep_completed=3600)

    def make(job: Job) -> Dict[str, Any]:
        # What the handler returns is the result its ack carries (None: none).
        worker.stop()  # one job is enough here: it is acked, then run() returns
        return {"url": "/r/%s.pdf" % job["id"], "pages": 7}

    worker = client.worker(["exports"], make, handle_signals=False)
    worker.run()

    # The producer, or an operator, reads how it ended.
    job = client.get_job(job_id)
    report = job.get("result") or {}
    print("job %s %s at %s: %s, %s pages" % (job["id"], job["state"], job.get("completed_at"),
                                              report.get("url"), report.get("pages")))


if __name__ == "__main__":
    main()
