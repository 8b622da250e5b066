#!/usr/bin/env bash
# The 200,000-topic benchmark (docs/PERFORMANCE.md, "200,000 topics"). It
# starts a Redis of its own (no persistence) and one broker on 127.0.0.1,
# pushes TOPICS topics of one job each with POST /api/v1/jobs/batch (1,000 a
# request), then times each request three times: the dashboard's topic page
# (GET /api/v1/topics?limit=100), a /metrics scrape that reads Redis (6 s
# apart: past [metrics] cache), kestrel's stats over the memcache port and
# GET /api/v1/stats. Everything started here is stopped at the end.
#
#   go build -o /tmp/gmq-topics . && GMQ=/tmp/gmq-topics bench/topics.sh
#
# REDIS_PORT (6390) and PORT (18090: HTTP; PORT+1: kestrel) pick the ports.
set -euo pipefail

GMQ=${GMQ:-./gmq}
TOPICS=${TOPICS:-200000}
REDIS_PORT=${REDIS_PORT:-6390}
PORT=${PORT:-18090}
. "$(dirname "$0")/lib.sh" topics

redis "$REDIS_PORT" --appendonly no # no persistence: the load, not the disk, is measured

cat >"$dir/conf.ini" <<EOF
[server]
http = 127.0.0.1:$PORT
log_level = warn
[redis]
url = redis://127.0.0.1:$REDIS_PORT/0
[beanstalk]
addr =
[rpc]
addr =
[kestrel]
addr = 127.0.0.1:$((PORT + 1))
EOF
"$GMQ" start -c "$dir/conf.ini" >"$dir/gmq.log" 2>&1 &
pids+=($!)
until curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null; do sleep 0.05; done

python3 - "$PORT" "$TOPICS" <<'PY'
import json, socket, sys, time, urllib.request

port, topics = int(sys.argv[1]), int(sys.argv[2])
http = "http://127.0.0.1:%d" % port

t0 = time.time()
for start in range(0, topics, 1000):
    jobs = [{"topic": "t%06d" % i, "body": "x"} for i in range(start, min(start + 1000, topics))]
    req = urllib.request.Request(http + "/api/v1/jobs/batch", data=json.dumps({"jobs": jobs}).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    urllib.request.urlopen(req).read()
print("pushed %d topics in %.1f s" % (topics, time.time() - t0))

def get(path):
    t0 = time.perf_counter()
    urllib.request.urlopen(http + path).read()
    return (time.perf_counter() - t0) * 1000

def metrics():
    time.sleep(6)  # past [metrics] cache (5 s): the scrape reads Redis
    return get("/metrics")

def kestrel_stats():
    s = socket.create_connection(("127.0.0.1", port + 1))
    t0 = time.perf_counter()
    s.sendall(b"stats\r\n")
    buf = b""
    while not buf.endswith(b"END\r\n"):
        buf += s.recv(1 << 20)
    s.close()
    return (time.perf_counter() - t0) * 1000

for name, f in [("GET /api/v1/topics?limit=100", lambda: get("/api/v1/topics?limit=100")),
                ("GET /api/v1/topics?limit=1000", lambda: get("/api/v1/topics?limit=1000")),
                ("GET /metrics (reading Redis)", metrics), ("GET /metrics (again, cached)", lambda: get("/metrics")),
                ("kestrel stats", kestrel_stats),
                ("GET /api/v1/stats", lambda: get("/api/v1/stats"))]:
    print("%-30s %s" % (name, ", ".join("%.1f ms" % f() for _ in range(3))))
PY
