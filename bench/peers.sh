#!/usr/bin/env bash
# gmq against its peers on one Redis (docs/PERFORMANCE.md, issue 32): what
# Redis spends per job life (push, take, ack) under gmq, asynq and BullMQ.
#
#   bench/peers.sh                    # ROUNDS=2 CLIENTS=32 JOBS=20000 SIZE=100
#   SIDES="gmq-http bullmq" bench/peers.sh
#   SIDES="gmq-http-batch bullmq-bulk" bench/peers.sh   # 50 jobs a request / addBulk call
#
# One redis-server (127.0.0.1, AOF on with appendfsync everysec, as `make
# run` sets it, and no automatic AOF rewrite, whose fork would land in one
# side's figures) serves every side, one side at a time, ROUNDS rounds
# alternating (every other round in reverse order, so that neither end of a
# round is always the same side). A side enqueues JOBS jobs of SIZE bytes
# from CLIENTS concurrent producers, then processes them all with CLIENTS
# concurrent consumers (workers), and exits. Sides:
#   gmq-beanstalk     gmq's beanstalkd port: put, then reserve + delete
#                     (the clients of `gmq bench`, without its cycle mode)
#   gmq-http          gmq's HTTP API, one job a request: push, then pop + ack
#   gmq-http-chained  the same, each ack also popping the next job
#   gmq-http-batch    the same, BATCH jobs a request (push, pop, ack)
#   asynq             github.com/hibiken/asynq's client, then its server
#   bullmq            BullMQ's Queue.add, then one Worker (removeOnComplete)
#   bullmq-bulk       the same with Queue.addBulk, BATCH jobs a call
# The gmq sides get a broker built from this checkout, started before the
# side's figures and stopped after, so its idle work never lands on another
# side. Each side has its own Redis database (gmq 0, asynq 1, BullMQ 2),
# emptied before it runs (gmq's is not: its broker keeps its state there,
# and a run leaves no job behind).
#
# Per side it prints, in a markdown table:
#   - Redis µs/job: Redis's CPU (INFO cpu, user + system, all its threads)
#     over the side's run, over JOBS: what one job life costs Redis;
#   - commands/job: INFO commandstats' calls over the run, over JOBS. Since
#     Redis 7 the commands a script runs are counted there too, so this is
#     every command Redis executed; scripts/job is the script and function
#     calls (eval, evalsha, fcall and their _ro forms) among them;
#   - client µs/job: the CPU of the side's own process (producers and
#     consumers) over its two phases: for asynq and BullMQ the library that
#     does the queue's work, for gmq only the load generator's clients;
#     broker µs/job: gmq's broker's CPU (/proc, 10 ms ticks), which does for
#     gmq's clients what asynq's and BullMQ's libraries do inside theirs;
#   - enqueue/s and process/s: the rates of the two phases.
# Then, unless MONITOR_JOBS=0, one more untimed run of each side with
# MONITOR_JOBS jobs under Redis's MONITOR, which tells the commands clients
# sent from those the scripts ran ("[0 lua]"): commandstats cannot.
#
# Every process is started here on 127.0.0.1 and stopped at the end (lib.sh).
# It needs redis-server and redis-cli, go, node and npm, and jq (all of which
# `make test` installs: scripts/test-deps.sh).
set -euo pipefail

ROUNDS=${ROUNDS:-2}
CLIENTS=${CLIENTS:-32}
JOBS=${JOBS:-20000}
SIZE=${SIZE:-100}
BATCH=${BATCH:-50}
SIDES=${SIDES:-gmq-beanstalk gmq-http asynq bullmq}
MONITOR_JOBS=${MONITOR_JOBS:-2000}
PORT=${PORT:-} # ports PORT..PORT+2 are used; unset: the first three free from 16600
SIDE_TIMEOUT=${SIDE_TIMEOUT:-120} # seconds a side may take before the run fails
bench=$(cd "$(dirname "$0")" && pwd)
. "$bench/lib.sh" peers

# The broker from the checkout as it is; asynq's side, a module of its own;
# BullMQ's packages, pinned by package-lock.json.
(cd "$bench/.." && go build -o "$dir/gmq" .)
(cd "$bench/asynq" && go build -o "$dir/peer" .)
if [ ! -d "$bench/bullmq/node_modules" ]; then
	(cd "$bench/bullmq" && npm ci --no-audit --no-fund >&2)
fi

# in_use PORT: something listens on 127.0.0.1:PORT (or on every address).
in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# A port taken by anything else would pass wait_port with someone else's
# server on it, and the figures (and FLUSHDB) would go to that one.
if [ -z "$PORT" ]; then
	PORT=16600
	while in_use "$PORT" || in_use $((PORT + 1)) || in_use $((PORT + 2)); do
		PORT=$((PORT + 3))
		[ "$PORT" -lt 17600 ] || { echo "no three free ports from 16600" >&2; exit 1; }
	done
fi
for p in "$PORT" $((PORT + 1)) $((PORT + 2)); do
	if in_use "$p"; then
		echo "port $p is taken; choose another PORT" >&2
		exit 1
	fi
done

redis "$PORT" --auto-aof-rewrite-percentage 0
redis_pid=$last
rcli() { redis-cli -h 127.0.0.1 -p "$PORT" "$@"; }
# The Redis that answers must be the one started here.
if [ "$(rcli info server | tr -d '\r' | sed -n 's/^process_id://p')" != "$redis_pid" ]; then
	echo "the Redis on port $PORT is not the one started here" >&2
	exit 1
fi

# redis_cpu: Redis's own CPU seconds (user + system), microsecond precision.
redis_cpu() {
	rcli info cpu | tr -d '\r' | awk -F: '/^used_cpu_(user|sys):/ {s += $2} END {printf "%.6f\n", s}'
}

# proc_cpu PID: a process's CPU seconds from /proc (10 ms ticks), all its threads.
proc_cpu() {
	awk -v hz="$(getconf CLK_TCK)" '{sub(/^.*\) /, ""); printf "%.2f\n", ($12 + $13) / hz}' "/proc/$1/stat"
}

# command_calls: "TOTAL SCRIPTS" from INFO commandstats since CONFIG RESETSTAT,
# less the one CONFIG RESETSTAT that began the window (counted after it ran).
# A line reads: cmdstat_NAME:calls=N,usec=...
command_calls() {
	rcli info commandstats | tr -d '\r' | awk '
		/^cmdstat_/ {
			split($0, f, /[:,]/)
			name = substr(f[1], 9)
			calls = substr(f[2], 7)
			if (name == "config|resetstat") next
			total += calls
			if (name ~ /^(eval|evalsha|eval_ro|evalsha_ro|fcall|fcall_ro)$/) scripts += calls
		}
		END { printf "%d %d\n", total, scripts }'
}

# start_broker / stop_broker: gmq's broker on database 0, for a gmq side only.
broker_pid=
start_broker() {
	"$dir/gmq" start --redis "redis://127.0.0.1:$PORT/0" --http "127.0.0.1:$((PORT + 1))" \
		--beanstalk "127.0.0.1:$((PORT + 2))" --rpc "" --kestrel "" 2>>"$dir/broker.log" &
	broker_pid=$!
	pids+=("$broker_pid")
	wait_port $((PORT + 1))
	wait_port $((PORT + 2))
	sleep 0.5 # let its start-up work (loading its functions, first timers) pass
	if ! kill -0 "$broker_pid" 2>/dev/null; then # the ports must be its own
		echo "gmq's broker exited:" >&2
		tail -n 5 "$dir/broker.log" >&2
		exit 1
	fi
}
stop_broker() {
	kill "$broker_pid" 2>/dev/null || true
	wait "$broker_pid" 2>/dev/null || true
	local keep=() p
	for p in "${pids[@]}"; do [ "$p" = "$broker_pid" ] || keep+=("$p"); done
	pids=("${keep[@]}")
	broker_pid=
}

# driver SIDE N: runs one side's process for N jobs; it prints one JSON line.
driver() {
	local side=$1 n=$2
	local common=(-jobs "$n" -clients "$CLIENTS" -size "$SIZE")
	case $side in
	gmq-beanstalk) timeout "$SIDE_TIMEOUT" "$dir/peer" -peer gmq-beanstalk -beanstalk "127.0.0.1:$((PORT + 2))" "${common[@]}" ;;
	gmq-http) timeout "$SIDE_TIMEOUT" "$dir/peer" -peer gmq-http -gmq "http://127.0.0.1:$((PORT + 1))" "${common[@]}" ;;
	gmq-http-chained) timeout "$SIDE_TIMEOUT" "$dir/peer" -peer gmq-http-chained -gmq "http://127.0.0.1:$((PORT + 1))" "${common[@]}" ;;
	gmq-http-batch) timeout "$SIDE_TIMEOUT" "$dir/peer" -peer gmq-http -batch "$BATCH" -gmq "http://127.0.0.1:$((PORT + 1))" "${common[@]}" ;;
	asynq) timeout "$SIDE_TIMEOUT" "$dir/peer" -peer asynq -redis "127.0.0.1:$PORT" -db 1 "${common[@]}" ;;
	bullmq | bullmq-bulk)
		local bulk=1
		[ "$side" = bullmq ] || bulk=$BATCH
		(cd "$bench/bullmq" && timeout "$SIDE_TIMEOUT" node peer.mjs --port "$PORT" --db 2 --jobs "$n" \
			--clients "$CLIENTS" --size "$SIZE" --bulk "$bulk" --timeout "$SIDE_TIMEOUT")
		;;
	*)
		echo "unknown side $side" >&2
		return 1
		;;
	esac
}

# prepare SIDE: before a side's figures, its database emptied or its broker up.
prepare() {
	case $1 in
	gmq-*) start_broker ;;
	asynq) rcli -n 1 flushdb >/dev/null ;;
	bullmq*) rcli -n 2 flushdb >/dev/null ;;
	esac
}

# run_side ROUND SIDE: one measured run; appends a row to $dir/rows (tab-
# separated: round, side, enqueue/s, process/s, Redis µs, commands, scripts,
# client µs, broker µs; the last five a job) and prints it.
run_side() {
	local round=$1 side=$2 json cpu0 cpu1 b0=0 b1=0 calls scripts
	prepare "$side"
	[ -z "$broker_pid" ] || b0=$(proc_cpu "$broker_pid")
	cpu0=$(redis_cpu)
	rcli config resetstat >/dev/null
	json=$(driver "$side" "$JOBS")
	read -r calls scripts < <(command_calls)
	cpu1=$(redis_cpu)
	[ -z "$broker_pid" ] || {
		b1=$(proc_cpu "$broker_pid")
		stop_broker
	}
	echo "$json" >>"$dir/json"
	jq -r --arg round "$round" --arg side "$side" --argjson n "$JOBS" --argjson c0 "$cpu0" --argjson c1 "$cpu1" \
		--argjson calls "$calls" --argjson scripts "$scripts" --argjson b0 "$b0" --argjson b1 "$b1" \
		'[$round, $side, .enqueue_per_s, .process_per_s, ($c1 - $c0) * 1e6 / $n, $calls / $n, $scripts / $n,
		  .cpu_s * 1e6 / $n, ($b1 - $b0) * 1e6 / $n] | @tsv' <<<"$json" >>"$dir/rows"
	tail -n 1 "$dir/rows" | row
}

# row: a tab-separated row as a markdown one (no broker: "–").
row() {
	awk -F'\t' '{printf "| %s | %s | %.0f | %.0f | %.1f | %.1f | %.2f | %.1f | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, ($2 ~ /^gmq/ ? sprintf("%.1f", $9) : "–")}'
}

# monitor_side SIDE: one untimed run of MONITOR_JOBS jobs under MONITOR; prints
# the commands clients sent and those scripts ran, a job.
monitor_side() {
	local side=$1 mon
	prepare "$side"
	redis-cli -h 127.0.0.1 -p "$PORT" monitor >"$dir/monitor" & # not rcli: $! must be redis-cli's
	mon=$!
	pids+=("$mon")
	for _ in $(seq 40); do # MONITOR is on once redis-cli has said OK
		grep -q '^OK' "$dir/monitor" && break
		sleep 0.05
	done
	driver "$side" "$MONITOR_JOBS" >/dev/null
	sleep 0.2
	kill "$mon" 2>/dev/null || true
	wait "$mon" 2>/dev/null || true
	[ -z "$broker_pid" ] || stop_broker
	awk -v n="$MONITOR_JOBS" -v side="$side" '
		$1 == "OK" { next }
		$3 == "lua]" { lua++; next }
		{ sent++ }
		END { printf "| %s | %.1f | %.1f | %.1f |\n", side, sent / n, lua / n, (sent + lua) / n }' "$dir/monitor"
}

read -ra order <<<"$SIDES"
echo "Redis $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') on port $PORT, AOF everysec; $JOBS jobs of $SIZE bytes a side, $CLIENTS clients, $ROUNDS rounds"
echo
echo "| round | side | enqueue/s | process/s | Redis µs/job | commands/job | scripts/job | client µs/job | broker µs/job |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
for round in $(seq "$ROUNDS"); do
	sides=("${order[@]}")
	if [ $((round % 2)) = 0 ]; then # every other round backwards
		sides=()
		for ((i = ${#order[@]} - 1; i >= 0; i--)); do sides+=("${order[i]}"); done
	fi
	for side in "${sides[@]}"; do
		run_side "$round" "$side"
	done
done

# The mean of the rounds, side by side, in SIDES' order.
echo
echo "Mean of $ROUNDS rounds:"
echo
echo "| side | enqueue/s | process/s | Redis µs/job | commands/job | scripts/job | client µs/job | broker µs/job |" # row, less the round
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for side in "${order[@]}"; do
	awk -F'\t' -v OFS='\t' -v s="$side" '$2 == s {n++; for (i = 3; i <= 9; i++) t[i] += $i}
		END {print "mean", s, t[3]/n, t[4]/n, t[5]/n, t[6]/n, t[7]/n, t[8]/n, t[9]/n}' "$dir/rows" | row | sed 's/^| mean | /| /'
done

if [ "$MONITOR_JOBS" -gt 0 ]; then
	echo
	echo "Under MONITOR, $MONITOR_JOBS jobs a side (untimed): commands a job life"
	echo
	echo "| side | sent by clients | run by scripts | all |"
	echo "|---|---:|---:|---:|"
	for side in "${order[@]}"; do
		monitor_side "$side"
	done
fi
