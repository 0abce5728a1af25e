#!/usr/bin/env bash
# Runs a command beside a real Redis: installs Debian's redis-server if it is missing, starts
# it on a loopback port in a temporary directory with persistence off, runs the command with
# RESILIX_REDIS_URL set, and stops the server by its pid, whatever the command's outcome.
#
#   redis/scripts/with-redis.sh cargo test -p resilix-redis
#
# RESILIX_REDIS_PORT picks the port (default 6390).
set -euo pipefail

if [ "$#" -eq 0 ]; then
  echo "usage: $0 COMMAND [ARGS...]" >&2
  exit 2
fi

if ! command -v redis-server >/dev/null 2>&1; then
  echo "with-redis: installing redis-server (Debian package)" >&2
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server >/dev/null
fi

port="${RESILIX_REDIS_PORT:-6390}"
dir="$(mktemp -d -t resilix-redis.XXXXXX)"
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
  --dir "$dir" --logfile "$dir/redis.log" --daemonize no \
  --databases 64 --enable-debug-command local &
pid=$!

cleanup() {
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

for _ in $(seq 1 100); do
  if redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null | grep -q PONG; then
    break
  fi
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "with-redis: redis-server exited; its log:" >&2
    cat "$dir/redis.log" >&2 || true
    exit 1
  fi
  sleep 0.1
done
# Answered, and by ours: a server left on the port by someone else would answer too.
answering="$(redis-cli -h 127.0.0.1 -p "$port" info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p')"
if ! kill -0 "$pid" 2>/dev/null || [ "$answering" != "$pid" ]; then
  echo "with-redis: redis-server exited (port $port taken?); its log:" >&2
  cat "$dir/redis.log" >&2 || true
  exit 1
fi
if ! redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null | grep -q PONG; then
  echo "with-redis: redis-server did not answer on 127.0.0.1:$port" >&2
  exit 1
fi
echo "with-redis: $(redis-server --version | cut -d' ' -f3) on 127.0.0.1:$port (pid $pid)" >&2

export RESILIX_REDIS_URL="redis://127.0.0.1:$port/0"
"$@"
