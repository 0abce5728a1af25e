#!/usr/bin/env bash
# Runs a command beside a real Redis Cluster: three masters (no replicas) of Debian's
# redis-server on consecutive loopback ports, joined by `redis-cli --cluster create`, with
# persistence off; runs the command with RESILIX_REDIS_CLUSTER_URLS set (comma-separated
# seed URLs) and stops every server by its pid, whatever the command's outcome.
#
#   bash redis/scripts/with-redis-cluster.sh cargo test -p resilix-redis --features cluster --test cluster
#
# RESILIX_REDIS_CLUSTER_PORT picks the first port (default 7390; it uses three).
set -euo pipefail

if [ "$#" -eq 0 ]; then
  echo "usage: $0 COMMAND [ARGS...]" >&2
  exit 2
fi

if ! command -v redis-server >/dev/null 2>&1; then
  echo "with-redis-cluster: installing redis-server (Debian package)" >&2
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server >/dev/null
fi

base="${RESILIX_REDIS_CLUSTER_PORT:-7390}"
ports=("$base" "$((base + 1))" "$((base + 2))")
dir="$(mktemp -d -t resilix-redis-cluster.XXXXXX)"
pids=()

cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT

fail() {
  echo "with-redis-cluster: $*; the servers' logs:" >&2
  for p in "${ports[@]}"; do
    echo "--- $p" >&2
    tail -n 20 "$dir/$p/redis.log" >&2 2>/dev/null || true
  done
  exit 1
}

for p in "${ports[@]}"; do
  mkdir -p "$dir/$p"
  # The cluster bus listens on port + 10000; node files live in the temporary directory, so
  # nothing of a previous run is remembered.
  redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$dir/$p" --logfile "$dir/$p/redis.log" --daemonize no \
    --cluster-enabled yes --cluster-config-file "$dir/$p/nodes.conf" \
    --cluster-node-timeout 2000 --enable-debug-command local &
  pids+=("$!")
done

for p in "${ports[@]}"; do
  up=""
  for _ in $(seq 1 100); do
    if redis-cli -h 127.0.0.1 -p "$p" ping 2>/dev/null | grep -q PONG; then up=1; break; fi
    sleep 0.1
  done
  [ -n "$up" ] || fail "redis-server on 127.0.0.1:$p did not answer"
done
# Answered, and by ours: a server left on a port by someone else would answer too.
for i in 0 1 2; do
  answering="$(redis-cli -h 127.0.0.1 -p "${ports[$i]}" info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p')"
  [ "$answering" = "${pids[$i]}" ] || fail "port ${ports[$i]} is answered by another server"
done

redis-cli --cluster create "127.0.0.1:${ports[0]}" "127.0.0.1:${ports[1]}" "127.0.0.1:${ports[2]}" \
  --cluster-replicas 0 --cluster-yes >"$dir/create.log" 2>&1 || {
  cat "$dir/create.log" >&2
  fail "redis-cli --cluster create failed"
}

# Every node must agree the cluster is up (all 16384 slots served) before the command runs.
for _ in $(seq 1 100); do
  ok=0
  for p in "${ports[@]}"; do
    if redis-cli -h 127.0.0.1 -p "$p" cluster info 2>/dev/null | tr -d '\r' | grep -q '^cluster_state:ok'; then
      ok=$((ok + 1))
    fi
  done
  [ "$ok" -eq 3 ] && break
  sleep 0.1
done
[ "$ok" -eq 3 ] || fail "the cluster did not reach cluster_state:ok"

echo "with-redis-cluster: $(redis-server --version | cut -d' ' -f3), 3 masters on 127.0.0.1:${ports[0]}-${ports[2]}" >&2

export RESILIX_REDIS_CLUSTER_URLS="redis://127.0.0.1:${ports[0]},redis://127.0.0.1:${ports[1]},redis://127.0.0.1:${ports[2]}"
"$@"
