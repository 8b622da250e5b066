"""A small pipeline with gmq's workflows: a job that waits for two others
and keeps their results, a follow-up pushed with its result when it
completes, and a batch whose callback comes once, when all its jobs have
ended, with the batch's summary; one worker does every step:
python3 workflow.py --url http://127.0.0.1:8000
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

    # load waits ("waiting") until extract and clean have completed, and
    # keeps their results; once it completes, its then is pushed, its body
    # wrapped with load's result (with_result).
    extract = client.push("py-etl-extract", {"day": 5}, ttr=60)
    clean = client.push("py-etl-clean", {"day": 5}, ttr=60)
    load = client.push("py-etl-load", {"day": 5}, ttr=60, after=[extract, clean], with_results=True,
                       then=[{"topic": "py-etl-report", "body": "day 5", "with_result": True}])
    print("load is %s" % client.get_job(load)["state"])

    # A batch: on_complete is pushed once every part has ended, with the
    # batch's summary as its result.
    batch_id, _ = client.create_batch([{"topic": "py-etl-part", "body": n, "ttr": 60} for n in ("a", "b")],
                                      on_complete={"topic": "py-etl-report", "body": "parts", "with_result": True},
                                      meta={"day": 5})

    reports: Dict[str, Any] = {}

    def work(job: Job) -> Any:
        if job["topic"] == "py-etl-extract":
            return {"rows": 120}
        if job["topic"] == "py-etl-load":  # its dependencies' results, by id
            kept = client.get_job(job["id"])["dependency_results"]
            return {"loaded": sum(r["rows"] for r in kept.values() if r)}
        body = job["body"]
        if job["topic"] == "py-etl-report" and isinstance(body, dict):  # with_result: {"body", "result"}
            reports[body["body"]] = body["result"]
            if len(reports) == 2:
                worker.stop()
        return None  # py-etl-clean, py-etl-part: done, no result

    worker = client.worker(["py-etl-extract", "py-etl-clean", "py-etl-load", "py-etl-part", "py-etl-report"], work, poll=1,
                           handle_signals=False)
    worker.run()
    print("day 5: loaded %d rows" % reports["day 5"]["loaded"])
    summary = reports["parts"]
    print("batch %s: %s, %d of %d parts completed, meta %r" % (summary["batch"], summary["state"],
                                                               summary["completed"], summary["total"], summary["meta"]))
    print("batch %s is %s" % (batch_id, client.get_batch(batch_id)["state"]))


if __name__ == "__main__":
    main()
