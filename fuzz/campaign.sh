#!/usr/bin/env bash
# A long fuzz campaign: every target (or those named) for RUNS executions each, one after the
# other, then the corpus minimised into corpus/<target> (committed, so CI's short runs start
# from it). Prints one line per target: executions, seconds, corpus size.
#
#   bash fuzz/campaign.sh                      # every target, 10 M executions each
#   RUNS=1000000 bash fuzz/campaign.sh breaker # one target, 1 M
#
# No sanitizer (`-s none`): the library has no `unsafe`, and the targets' asserts are the
# oracle; without AddressSanitizer a run is several times faster. Inputs are capped at
# MAX_LEN bytes (1,024: about a hundred steps of a timeline whose gaps already span 1 ns to
# years, so a short input still crosses every era).
set -euo pipefail
cd "$(dirname "$0")"
RUNS=${RUNS:-10000000}
MAX_LEN=${MAX_LEN:-1024}
FUZZ=(cargo fuzz)
if rustup toolchain list | grep -q '^nightly'; then FUZZ=(cargo +nightly fuzz); fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v '^resilix-fuzz$')
fi
mkdir -p logs
for t in "${targets[@]}"; do
  "${FUZZ[@]}" build -s none "$t" >/dev/null 2>&1
  mkdir -p "corpus/$t"
  log="logs/$t.log"
  start=$(date +%s)
  if ! "${FUZZ[@]}" run -s none "$t" "corpus/$t" -- -runs="$RUNS" -max_len="$MAX_LEN" \
      -print_final_stats=1 >"$log" 2>&1; then
    tail -40 "$log"; echo "$t: FAILED (crash input in artifacts/$t)"; exit 1
  fi
  secs=$(( $(date +%s) - start ))
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  # Minimise: keep only inputs that add coverage.
  "${FUZZ[@]}" cmin -s none "$t" "corpus/$t" -- -max_len="$MAX_LEN" >/dev/null 2>&1
  echo "$t: $runs executions in $secs s; corpus $(ls "corpus/$t" | wc -l) files, $(du -sh "corpus/$t" | cut -f1)"
done
