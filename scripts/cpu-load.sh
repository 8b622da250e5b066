#!/usr/bin/env bash
# CPU-bound processes beside the test suite, to show that it holds on a busy
# machine (make test-loaded). Each is a shell spinning in a loop: it never
# sleeps and touches no disk or network, so it takes only CPU.
#   scripts/cpu-load.sh start [N]   start N of them (default 3 a core)
#   scripts/cpu-load.sh stop        stop the ones it started
# Their pids are in $GMQ_LOAD_PIDS (default .cpu-load.pids).
set -euo pipefail
cd "$(dirname "$0")/.."
pids=${GMQ_LOAD_PIDS:-$PWD/.cpu-load.pids}

case "${1:-}" in
start)
  n=${2:-$((3 * $(nproc)))}
  for _ in $(seq "$n"); do
    nohup sh -c 'while :; do :; done' >/dev/null 2>&1 &
    echo $! >>"$pids"
  done
  echo "cpu-load: $n CPU-bound processes running ($(nproc) cores); stop them with: $0 stop"
  ;;
stop)
  [ -f "$pids" ] || exit 0
  while read -r pid; do kill "$pid" 2>/dev/null || true; done <"$pids"
  rm -f "$pids"
  echo "cpu-load: stopped"
  ;;
*)
  echo "usage: $0 start [N] | stop" >&2
  exit 2
  ;;
esac
