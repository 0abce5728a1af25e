#!/usr/bin/env bash
# The inbound load harness (issue 36): resilix's inbound layer beside tower's ConcurrencyLimit +
# LoadShed and a plain server, on loopback, open loop, at 1×, 3× and 10× the handler's measured
# capacity. Arguments go to the harness (adapter-tokio/examples/inbound_load.rs):
#   scripts/inbound-load.sh              the full table (20 s per run, about 5 minutes)
#   scripts/inbound-load.sh --quick      CI: 2 s per run, exits 1 if the issue's bar is missed
#   scripts/inbound-load.sh --converge   adaptive() against capacities 2, 4, 64 and 1000
# It records the host's load beside the table: loopback numbers depend on it.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p resilix-tokio --example inbound_load --features inbound
echo "host: $(uptime)"
exec target/release/examples/inbound_load "$@"
