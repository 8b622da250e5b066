#!/usr/bin/env bash
# gmq's scaling benchmark (docs/PERFORMANCE.md, "Scaling: brokers, Redis
# masters, and beanstalkd's one core"). Over beanstalkd's protocol, with
# `gmq bench` and the CPU of every process read from /proc, it measures:
#   - 1, 2 and 4 brokers sharing one Redis;
#   - 2 brokers on a Redis Cluster of 3 masters (no replicas);
#   - the real beanstalkd (Debian's), in memory, as the others; then pinned
#     to core 0 with the load on core 1 (taskset), so it has a whole core:
#     its single-core ceiling.
# Every process is started here on 127.0.0.1 and stopped at the end.
#
#   make build && bench/scale.sh            # JOBS=40000 CLIENTS=64 TOPICS=16
#
# It prints each run's table (jobs/s, latencies, then each process's cores
# and CPU µs per job) to stdout.
set -euo pipefail

GMQ=${GMQ:-./gmq}
JOBS=${JOBS:-40000}
CLIENTS=${CLIENTS:-64}
TOPICS=${TOPICS:-16}
PORT=${PORT:-16400} # ports PORT..PORT+40 are used
. "$(dirname "$0")/lib.sh" scale

# brokers N URL: starts N brokers on the Redis at URL; sets $addrs (their
# beanstalkd addresses) and $watch (name=pid for --cpu).
brokers() {
	addrs="" watch_brokers=""
	for i in $(seq "$1"); do
		local bport=$((PORT + 20 + i)) hport=$((PORT + 30 + i))
		"$GMQ" start --redis "$2" --http "127.0.0.1:$hport" --beanstalk "127.0.0.1:$bport" \
			--rpc "" --kestrel "" 2>"$dir/broker-$i.log" &
		pids+=("$!")
		watch_brokers+="${watch_brokers:+,}broker$i=$!"
		addrs+="${addrs:+,}127.0.0.1:$bport"
	done
	for i in $(seq "$1"); do wait_port $((PORT + 20 + i)); done
}

bench() {
	echo "## $1"
	shift
	${PIN:-} "$GMQ" bench --clients "$CLIENTS" --jobs "$JOBS" --topics "$TOPICS" "$@"
	echo
}

for n in 1 2 4; do
	redis "$PORT"
	redis_pid=$last
	brokers "$n" "redis://127.0.0.1:$PORT"
	bench "$n broker(s), one Redis" --beanstalk "$addrs" --cpu "redis=$redis_pid,$watch_brokers"
	stop_all
	rm -rf "$dir/redis-$PORT"
done

cluster=() watch_masters=""
for i in 1 2 3; do
	port=$((PORT + 10 + i))
	redis "$port" --cluster-enabled yes --cluster-config-file "$dir/redis-$port/nodes.conf"
	cluster+=("127.0.0.1:$port")
	watch_masters+="${watch_masters:+,}master$i=$last"
done
redis-cli --cluster create "${cluster[@]}" --cluster-yes >/dev/null
for c in "${cluster[@]}"; do
	until redis-cli -h 127.0.0.1 -p "${c#*:}" cluster info | grep -q cluster_state:ok; do sleep 0.1; done
done
brokers 2 "redis://${cluster[0]}?addr=${cluster[1]}&addr=${cluster[2]}"
bench "2 brokers, Redis Cluster of 3 masters" --beanstalk "$addrs" --cpu "$watch_masters,$watch_brokers"
stop_all

beanstalkd -l 127.0.0.1 -p $((PORT + 40)) &
pids+=("$!")
wait_port $((PORT + 40))
bench "beanstalkd $(beanstalkd -v | awk '{print $2}'), in memory" --beanstalk "127.0.0.1:$((PORT + 40))" --cpu "beanstalkd=$!"
stop_all

# beanstalkd is one thread: with a core of its own it shows its ceiling.
taskset -c 0 beanstalkd -l 127.0.0.1 -p $((PORT + 40)) &
pids+=("$!")
wait_port $((PORT + 40))
PIN="taskset -c 1" bench "beanstalkd pinned to core 0, the load to core 1" \
	--beanstalk "127.0.0.1:$((PORT + 40))" --cpu "beanstalkd=$!"
