#!/usr/bin/env bash
# A/B of a change on the beanstalkd path (docs/PERFORMANCE.md, "Issue 20"):
# builds gmq at two revisions and runs `gmq bench` against each in turn,
# ROUNDS times alternating, each build against a fresh Redis (AOF everysec,
# as `make run` sets it), beside one in-memory beanstalkd measured in the
# same run, so that each row has its ratio to the real thing.
#
#   bench/ab.sh BEFORE_REV AFTER_REV      # ROUNDS=2 CLIENTS=32 JOBS=20000
#
# Every process is started here on 127.0.0.1 and stopped at the end. It
# prints each run's table to stdout, headed by the build and the round.
set -euo pipefail

before=${1:?usage: bench/ab.sh BEFORE_REV AFTER_REV}
after=${2:?usage: bench/ab.sh BEFORE_REV AFTER_REV}
ROUNDS=${ROUNDS:-2}
CLIENTS=${CLIENTS:-32}
JOBS=${JOBS:-20000}
PORT=${PORT:-16500} # ports PORT..PORT+3 are used
dir=$(mktemp -d /tmp/gmq-ab.XXXXXX)
pids=()

cleanup() {
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT

build() { # rev -> $dir/gmq-rev
	git worktree add -q --detach "$dir/src-$1" "$1"
	(cd "$dir/src-$1" && go build -o "$dir/gmq-$1" .)
	git worktree remove --force "$dir/src-$1"
}

wait_port() {
	for _ in $(seq 100); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return; fi
		sleep 0.1
	done
	echo "nothing listens on $1" >&2
	exit 1
}

build "$before"
build "$after"
beanstalkd -l 127.0.0.1 -p $((PORT + 3)) &
pids+=($!)
wait_port $((PORT + 3))

for round in $(seq "$ROUNDS"); do
	for rev in "$before" "$after"; do
		data=$(mktemp -d "$dir/redis.XXXXXX")
		redis-server --port "$PORT" --dir "$data" --appendonly yes --appendfsync everysec --save "" --daemonize no >/dev/null &
		redis=$!
		wait_port "$PORT"
		"$dir/gmq-$rev" start --redis "redis://127.0.0.1:$PORT" --http "127.0.0.1:$((PORT + 1))" \
			--beanstalk "127.0.0.1:$((PORT + 2))" --rpc "" --kestrel "" 2>/dev/null &
		broker=$!
		wait_port $((PORT + 2))
		echo "## round $round, build $rev"
		"$dir/gmq-$after" bench --beanstalk "127.0.0.1:$((PORT + 2))" --vs "127.0.0.1:$((PORT + 3))" \
			--clients "$CLIENTS" --jobs "$JOBS"
		kill "$broker" "$redis"
		wait "$broker" "$redis" 2>/dev/null || true
	done
done
