"""Sends oversized pushes with Python's urllib, as gmq_client.py does, and
counts the answers: every one must be read as a 413.

usage: oversize.py URL BYTES TRIES THREADS"""
import json
import sys
import threading
import urllib.error
import urllib.request

url, size, tries, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
data = json.dumps({"topic": "big", "body": "x" * size}).encode()
counts, lock = {}, threading.Lock()


def one():
    req = urllib.request.Request(url + "/api/v1/jobs", data=data, method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            got = str(resp.status)
    except urllib.error.HTTPError as e:
        body = e.read().decode("utf-8", "replace")
        got = str(e.code) if "too large" in json.loads(body).get("error", "") else "%d %s" % (e.code, body)
    except Exception as e:  # a reset or a broken pipe: the 413 was lost
        got = type(e).__name__ + ": " + str(e)
    with lock:
        counts[got] = counts.get(got, 0) + 1


def worker(n):
    for _ in range(n):
        one()


ts = [threading.Thread(target=worker, args=(tries // threads,)) for _ in range(threads)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print(json.dumps(counts))
