#!/usr/bin/env bash
# Runs a command beside a primary, a replica and a Redis Sentinel on loopback: installs
# Debian's redis-server (and redis-sentinel, falling back to `redis-server --sentinel`) if
# missing, starts them in a temporary directory with persistence off, runs the command with
#   RESILIX_SENTINEL_URL      redis://127.0.0.1:26390 (the sentinel)
#   RESILIX_SENTINEL_SERVICE  resilix (the monitored service's name)
#   RESILIX_PRIMARY_PID       the primary's pid (a test kills it; Sentinel promotes the replica)
#   RESILIX_REDIS_URL         redis://127.0.0.1:6391/0 (the primary, for the other tests)
# and stops every process it started by its pid, whatever the command's outcome.
#
#   redis/scripts/with-sentinel.sh cargo test -p resilix-redis --test failover
set -euo pipefail

if [ "$#" -eq 0 ]; then
  echo "usage: $0 COMMAND [ARGS...]" >&2
  exit 2
fi
if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
if ! command -v redis-server >/dev/null 2>&1; then
  echo "with-sentinel: installing redis-server (Debian package)" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server >/dev/null
fi
if ! command -v redis-sentinel >/dev/null 2>&1; then
  echo "with-sentinel: installing redis-sentinel (Debian package)" >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-sentinel >/dev/null 2>&1 || true
fi
if command -v redis-sentinel >/dev/null 2>&1; then SENTINEL=(redis-sentinel); else SENTINEL=(redis-server); fi

primary="${RESILIX_PRIMARY_PORT:-6391}"
replica="${RESILIX_REPLICA_PORT:-6392}"
sport="${RESILIX_SENTINEL_PORT:-26390}"
dir="$(mktemp -d -t resilix-sentinel.XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT

server() { # port dir-suffix extra-args...
  local port="$1"; shift
  mkdir -p "$dir/$port"
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$dir/$port" --logfile "$dir/$port/redis.log" --daemonize no \
    --enable-debug-command local "$@" &
  pids+=($!)
}
wait_ping() {
  for _ in $(seq 1 100); do
    if redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null | grep -q PONG; then return 0; fi
    sleep 0.1
  done
  echo "with-sentinel: nothing answered on 127.0.0.1:$1" >&2
  cat "$dir"/*/redis.log "$dir"/sentinel.log 2>/dev/null >&2 || true
  exit 1
}

server "$primary"
primary_pid=$!
wait_ping "$primary"
server "$replica" --replicaof 127.0.0.1 "$primary"
wait_ping "$replica"
cat > "$dir/sentinel.conf" <<CONF
port $sport
bind 127.0.0.1
daemonize no
logfile $dir/sentinel.log
dir $dir
sentinel monitor resilix 127.0.0.1 $primary 1
sentinel down-after-milliseconds resilix 1000
sentinel failover-timeout resilix 10000
sentinel parallel-syncs resilix 1
CONF
if [ "${SENTINEL[0]}" = redis-server ]; then
  redis-server "$dir/sentinel.conf" --sentinel &
else
  redis-sentinel "$dir/sentinel.conf" &
fi
pids+=($!)
wait_ping "$sport"
# The replica in sync before anything starts.
for _ in $(seq 1 100); do
  if redis-cli -h 127.0.0.1 -p "$replica" info replication | tr -d '\r' | grep -q '^master_link_status:up'; then break; fi
  sleep 0.1
done
echo "with-sentinel: primary :$primary (pid $primary_pid), replica :$replica, sentinel :$sport" >&2

export RESILIX_SENTINEL_URL="redis://127.0.0.1:$sport"
export RESILIX_SENTINEL_SERVICE=resilix
export RESILIX_PRIMARY_PID="$primary_pid"
export RESILIX_REDIS_URL="redis://127.0.0.1:$primary/0"
"$@"
