#!/usr/bin/env bash
# A long fuzz campaign: every target (or those named) for RUNS executions each, one after the
# other, starting from the kept seeds (seeds/<target>/, tracked) and from whatever an earlier
# campaign left in corpus/<target>/ (ignored by git: a campaign's corpus stays on the machine
# that grew it). Afterwards the corpus is minimised (`cargo fuzz cmin`). Prints one line per
# target: executions, seconds, corpus size. Installs cargo-fuzz if it is missing.
#
#   bash fuzz/campaign.sh                      # every target, 10 M executions each
#   RUNS=1000000 bash fuzz/campaign.sh breaker # one target, 1 M
#   JOBS=2 bash fuzz/campaign.sh               # two targets at a time (one per core)
#   bash fuzz/seeds.sh breaker                 # then: refresh the kept seeds from the corpus
#
# No sanitizer (`-s none`): the library has no `unsafe`, and the targets' asserts are the
# oracle; without AddressSanitizer a run is several times faster. Inputs are capped at
# MAX_LEN bytes (1,024: about a hundred steps of a timeline whose gaps already span 1 ns to
# years, so a short input still crosses every era). A failure leaves its input in
# artifacts/<target>/ and its log in logs/<target>.log.
set -euo pipefail
cd "$(dirname "$0")"
RUNS=${RUNS:-10000000}
MAX_LEN=${MAX_LEN:-1024}
JOBS=${JOBS:-1}
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz@0.13.1 --locked --debug -q
FUZZ=(cargo fuzz)
if rustup toolchain list | grep -q '^nightly'; then FUZZ=(cargo +nightly fuzz); fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v '^resilix-fuzz$')
fi
mkdir -p logs
# Every target in one build (cargo builds them side by side).
"${FUZZ[@]}" build -s none >/dev/null 2>&1 || "${FUZZ[@]}" build -s none

campaign() {
  local t=$1 log="logs/$1.log" start secs runs
  mkdir -p "corpus/$t" "artifacts/$t"
  start=$(date +%s)
  # New inputs go to the first directory; the seeds are read, never written.
  if ! "${FUZZ[@]}" run -s none "$t" "corpus/$t" "seeds/$t" -- -runs="$RUNS" -max_len="$MAX_LEN" \
      -print_final_stats=1 >"$log" 2>&1; then
    tail -40 "$log"; echo "$t: FAILED (crash input in artifacts/$t)"; return 1
  fi
  secs=$(( $(date +%s) - start ))
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  # Minimise: keep only inputs that add coverage (seeds included).
  cp -n "seeds/$t"/* "corpus/$t"/ 2>/dev/null || true
  "${FUZZ[@]}" cmin -s none "$t" "corpus/$t" -- -max_len="$MAX_LEN" >>"$log" 2>&1
  echo "$t: $runs executions in $secs s; corpus $(ls "corpus/$t" | wc -l) files, $(du -sh "corpus/$t" | cut -f1)"
}

failed=0
running=0
for t in "${targets[@]}"; do
  campaign "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then
    wait -n || failed=1
    running=$((running - 1))
  fi
done
while [ "$running" -gt 0 ]; do
  wait -n || failed=1
  running=$((running - 1))
done
exit "$failed"
