#!/usr/bin/env bash
# The crate's load test over its matrix: N processes x offered rates from below the quota to
# forty times it, each fault (none, a 2 s and a 5 s pause, a kill and restart, a Sentinel
# failover) in each failure mode, against a quota of 1,000/s, burst 100. Each run prints the
# most admitted in any 1 s and 0.1 s window against the stated bound, latency percentiles,
# what the failure mode did, and the host's own longest stall; a run over its bound fails.
#
#   bash redis/scripts/load-matrix.sh            # the full matrix, release build (~10 min)
#   bash redis/scripts/load-matrix.sh --short    # CI: 4 processes at 5x the quota, pause and
#                                                # kill, allow and deny (~40 s after the build)
#
# Needs redis-server (and, for the failover, its --sentinel mode) on PATH; each run starts and
# stops its own servers on free loopback ports.
set -euo pipefail
cd "$(dirname "$0")/../.."
echo "load: $(uptime)"
if [ "${1:-}" = "--short" ]; then
  # FLEET_LOAD_BIN: an already built example (CI's test step builds it), else a debug build.
  bin="${FLEET_LOAD_BIN:-}"
  if [ -z "$bin" ]; then
    cargo build -q -p resilix-redis --all-features --example fleet_load
    bin=target/debug/examples/fleet_load
  fi
  for fault in pause kill; do
    for mode in allow deny; do
      "$bin" 4 1250 5 "$fault" "$mode"
    done
  done
  exit 0
fi
cargo build -q --release -p resilix-redis --example fleet_load
bin=target/release/examples/fleet_load
procs="${PROCS:-8}"
status=0
for rate in ${RATES:-100 1250 5000}; do
  for fault in ${FAULTS:-none pause pause5 kill failover}; do
    for mode in ${MODES:-allow deny local}; do
      "$bin" "$procs" "$rate" 9 "$fault" "$mode" || status=1
    done
  done
done
echo "load: $(uptime)"
exit "$status"
