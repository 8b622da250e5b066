#!/usr/bin/env bash
# A/B of a change on the beanstalkd path (docs/performance-log.md, "Issue 20"):
# builds gmq at two revisions and runs `gmq bench` against each in turn,
# ROUNDS times alternating, each build against a fresh Redis (AOF everysec,
# as `make run` sets it), beside an in-memory beanstalkd measured in the
# same run, so that each row has its ratio to the real thing.
#
#   bench/ab.sh BEFORE_REV AFTER_REV      # ROUNDS=2 CLIENTS=32 JOBS=20000
#   bench/ab.sh HEAD .                     # "." is the checkout, uncommitted changes too
#   BINLOG=1 bench/ab.sh HEAD .            # beanstalkd with its binlog (-b), as gmq keeps an AOF
#
# Every process is started here on 127.0.0.1 and stopped at the end. It
# prints each run's table to stdout, headed by the build and the round, with
# the CPU that Redis and the broker spent per job (--cpu): the goal's own
# measure, and steadier than jobs/s on a busy machine.
set -euo pipefail

before=${1:?usage: bench/ab.sh BEFORE_REV AFTER_REV}
after=${2:?usage: bench/ab.sh BEFORE_REV AFTER_REV}
ROUNDS=${ROUNDS:-2}
CLIENTS=${CLIENTS:-32}
JOBS=${JOBS:-20000}
PORT=${PORT:-16500} # ports PORT..PORT+3 are used
. "$(dirname "$0")/lib.sh" ab

build() { # rev -> $dir/gmq-rev; "." is the checkout as it is, uncommitted changes too
	if [ "$1" = . ]; then
		go build -o "$dir/gmq-." .
		return
	fi
	git worktree add -q --detach "$dir/src-$1" "$1"
	(cd "$dir/src-$1" && go build -o "$dir/gmq-$1" .)
	git worktree remove --force "$dir/src-$1"
}

build "$before"
build "$after"
for round in $(seq "$ROUNDS"); do
	for rev in "$before" "$after"; do
		redis "$PORT"
		redis_pid=$last
		"$dir/gmq-$rev" start --redis "redis://127.0.0.1:$PORT" --http "127.0.0.1:$((PORT + 1))" \
			--beanstalk "127.0.0.1:$((PORT + 2))" --rpc "" --kestrel "" 2>"$dir/broker.log" &
		pids+=("$!")
		broker_pid=$!
		if [ -n "${BINLOG:-}" ]; then
			mkdir -p "$dir/binlog-$round-$rev"
			beanstalkd -l 127.0.0.1 -p $((PORT + 3)) -b "$dir/binlog-$round-$rev" &
		else
			beanstalkd -l 127.0.0.1 -p $((PORT + 3)) &
		fi
		pids+=("$!")
		wait_port $((PORT + 2))
		wait_port $((PORT + 3))
		echo "## round $round, build $rev"
		"$dir/gmq-$after" bench --beanstalk "127.0.0.1:$((PORT + 2))" --vs "127.0.0.1:$((PORT + 3))" \
			--clients "$CLIENTS" --jobs "$JOBS" --cpu "redis=$redis_pid,broker=$broker_pid"
		stop_all
	done
done
