#!/usr/bin/env bash
# make run: set up what is missing, make sure a Redis is there, build and start
# gmq in the foreground with the shipped conf.ini. Ctrl-C stops gmq, and then
# the Redis this script started, if it started one.
#   - installs redis-server with apt-get when it is missing and we are root
#     (otherwise prints the command to run);
#   - uses the Redis of conf.ini's [redis] url (or $GMQ_REDIS) if it answers,
#     else starts a local one with AOF on, its data under ./data ($GMQ_DATA).
# Variables (make run VAR=value, or in the environment):
#   GMQ_CONF        the configuration file (conf.ini); a copy with other
#                   ports runs a second broker beside the first
#   GMQ_REDIS       the Redis URL, instead of conf.ini's [redis] url
#   GMQ_KEEP_REDIS  1: leave the Redis this script started running after
#                   gmq stops (stop it later: kill $(cat data/redis.pid))
#   GMQ_DATA        the folder of the Redis it starts (data): its AOF, log
#                   and pid file
set -euo pipefail
cd "$(dirname "$0")/.."

conf=${GMQ_CONF:-conf.ini}
data=${GMQ_DATA:-$PWD/data}

# ini SECTION KEY prints "=VALUE" when conf sets KEY in [SECTION] (VALUE may
# be empty), read as gmq's ini library reads it: KEY = or KEY :, a comment
# from a ';' or '#' on, or a value in "" or ``.
ini() { awk -v s="[$1]" -v k="$2" '
  /^[[:space:]]*\[/ { in_s = ($1 == s) }
  in_s && $0 ~ "^[[:space:]]*" k "[[:space:]]*[=:]" {
    v = $0; sub(/^[^=:]*[=:][[:space:]]*/, "", v)
    if (v ~ /^"/) { sub(/^"/, "", v); sub(/".*$/, "", v) }
    else if (v ~ /^`/) { sub(/^`/, "", v); sub(/`.*$/, "", v) }
    else { sub(/[;#].*$/, "", v); sub(/[[:space:]]+$/, "", v) }
    print "=" v; exit
  }
' "$conf"; }

url=${GMQ_REDIS:-$(ini redis url)}
url=${url#=}
url=${url:-redis://127.0.0.1:6379/0}
hostport=${url#*://}; hostport=${hostport#*@}; hostport=${hostport%%/*}
host=${hostport%:*}; port=${hostport##*:}
[ "$host" = "$port" ] && port=6379

need() { command -v "$1" >/dev/null 2>&1; }

if ! need go; then
  echo "make run: Go is missing; install Go 1.26 or newer (https://go.dev/doc/install)" >&2
  exit 1
fi

answers() { (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; }

# The ports gmq will listen on must be free, checked before anything is
# built: a second make run would fail with "address already in use" after
# rebuilding ./gmq under the broker that runs. These are every listen
# address config/config.go reads, each with its default (none: off by
# default; TestMakeRunRefusesAPortInUse tries each one conf.ini has); an
# address set empty turns its front end off.
for setting in "server http 127.0.0.1:8000" "beanstalk addr 127.0.0.1:11300" "rpc addr 127.0.0.1:9503" \
  "kestrel addr 127.0.0.1:22133" "kestrel text_addr" "kestrel thrift_addr" "metrics addr"; do
  set -- $setting
  addr=$(ini "$1" "$2"); if [ -n "$addr" ]; then addr=${addr#=}; else addr=${3:-}; fi
  [ -n "$addr" ] || continue
  p=${addr##*:}; h=${addr%:*}
  case "$h" in ""|0.0.0.0|"[::]"|"::") h=127.0.0.1 ;; esac
  h=${h#[}; h=${h%]} # [::1] is ::1 to bash's /dev/tcp
  if (exec 3<>"/dev/tcp/$h/$p") 2>/dev/null; then
    echo "make run: $addr ([$1] $2 in $conf) is already in use: is gmq already running?" >&2
    echo "make run: to run another beside it, copy $conf with other ports and run GMQ_CONF=that.ini make run" >&2
    exit 1
  fi
done

if answers; then
  echo "make run: using the Redis at $host:$port"
else
  if ! need redis-server; then
    if [ "$(id -u)" = 0 ] && need apt-get; then
      echo "make run: installing redis-server"
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
    else
      echo "make run: redis-server is missing; install it with: sudo apt-get install -y redis-server" >&2
      exit 1
    fi
  fi
  case "$host" in 127.0.0.1|localhost) ;; *)
    echo "make run: the Redis at $host:$port does not answer, and it is not local, so it is not started here" >&2
    exit 1 ;;
  esac
  mkdir -p "$data"
  started_redis=1
  echo "make run: starting a local Redis on $host:$port (AOF on, data in $data, log in $data/redis.log)"
  redis-server --bind 127.0.0.1 --port "$port" --dir "$data" --appendonly yes --appendfsync everysec \
    --daemonize yes --pidfile "$data/redis.pid" --logfile "$data/redis.log"
  for _ in $(seq 50); do answers && break; sleep 0.1; done
  answers || { echo "make run: Redis did not start; see $data/redis.log" >&2; exit 1; }
fi

# The build says it runs: a first one fetches modules and compiles for a
# minute or more, which looked like a hang. On a terminal, one line redrawn
# with the seconds so far; otherwise (a log, a pipe) a line every 10 s.
build_start=$SECONDS
echo "make run: building ./gmq (go build; a first build fetches modules and takes a minute or more)"
go build -o gmq . &
build=$!
next=10
while kill -0 "$build" 2>/dev/null; do
  sleep 1
  kill -0 "$build" 2>/dev/null || break
  took=$((SECONDS - build_start))
  if [ -t 1 ]; then
    printf '\rmake run: building ./gmq… %ds' "$took"
  elif [ "$took" -ge "$next" ]; then
    echo "make run: still building ./gmq (${took}s)"
    next=$((took + 10))
  fi
done
[ -t 1 ] && printf '\r\033[K'
wait "$build" || { echo "make run: go build failed (its errors are above)" >&2; exit 1; }
echo "make run: built ./gmq in $((SECONDS - build_start))s; starting it with $conf"
if [ -z "${started_redis:-}" ] || [ "${GMQ_KEEP_REDIS:-}" = 1 ]; then
  exec ./gmq start -c "$conf" --redis "$url"
fi
# gmq runs as a child so that the Redis started above stops after it. Ctrl-C
# reaches both (one process group); gmq drains and stops on it, and this
# script waits for that before stopping Redis (SHUTDOWN: its AOF is written).
./gmq start -c "$conf" --redis "$url" &
gmq=$!
trap 'kill -TERM "$gmq" 2>/dev/null || true' INT TERM
# A wait that Ctrl-C interrupts returns 130 while gmq still drains: wait
# again while it runs. The status is then gmq's own (0 after a clean stop),
# from one more wait once it is gone: bash keeps an ended child's status,
# and an interrupted wait's 130 is not it (gmq can stop within the trap,
# and make run exited 130 after a clean Ctrl-C: TestMakeRun, once).
while kill -0 "$gmq" 2>/dev/null; do
  wait "$gmq" || true
done
if wait "$gmq"; then status=0; else status=$?; fi
# Only the Redis it started: one that took its place since (redis.pid
# names another process) is someone else's.
started=$(cat "$data/redis.pid" 2>/dev/null || true)
running=$(redis-cli -h "$host" -p "$port" info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p' || true)
if [ -n "$started" ] && [ "$running" = "$started" ]; then
  echo "make run: stopping the Redis it started on $host:$port (GMQ_KEEP_REDIS=1 keeps it)"
  redis-cli -h "$host" -p "$port" shutdown >/dev/null 2>&1 || kill "$started" 2>/dev/null || true
elif [ -n "$running" ]; then
  echo "make run: the Redis it started has gone, and the one now on $host:$port is not its: left running"
fi
exit "$status"
