# bench/lib.sh: what the benchmark scripts share, sourced by each. It makes
# $dir, a temporary folder removed at exit, and keeps $pids, every process
# started, stopped at exit; all listen on 127.0.0.1.
#   . "$(dirname "$0")/lib.sh" NAME    # NAME names the temporary folder

dir=$(mktemp -d "/tmp/gmq-${1:-bench}.XXXXXX")
pids=()

# stop_all kills every process started so far (reaping each quietly).
stop_all() {
	for p in "${pids[@]}"; do
		kill -9 "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	pids=()
}

cleanup() {
	stop_all
	rm -rf "$dir"
}
trap cleanup EXIT

# wait_port waits until something listens on 127.0.0.1:$1.
wait_port() {
	for _ in $(seq 200); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
		sleep 0.05
	done
	echo "nothing listens on port $1" >&2
	return 1
}

# redis PORT [ARGS...]: starts a redis-server as `make run` does (AOF on,
# appendfsync everysec; ARGS may say otherwise) in a folder of its own, and
# sets $last to its pid.
redis() {
	local port=$1
	shift
	rm -rf "$dir/redis-$port"
	mkdir -p "$dir/redis-$port"
	redis-server --bind 127.0.0.1 --port "$port" --dir "$dir/redis-$port" --appendonly yes \
		--appendfsync everysec --save "" --logfile "$dir/redis-$port/log" "$@" &
	last=$!
	pids+=("$last")
	wait_port "$port"
}
