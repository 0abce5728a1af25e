#!/usr/bin/env bash
# Mutation testing of the core's decision and state files with cargo-mutants (issue 21).
#
#   bash scripts/mutants.sh                                  # every file named below (hours)
#   bash scripts/mutants.sh core/src/mechanism/slots.rs      # the files given
#   bash scripts/mutants.sh --in-diff changes.diff           # only what a diff touches (CI-sized)
#   LIB_ONLY=1 bash scripts/mutants.sh core/src/time/era.rs  # judged by the unit tests alone
#   MUTANTS_ARGS="--re ceiling" bash scripts/mutants.sh core/src/retry/backoff.rs  # some mutants
#
# LIB_ONLY=1 runs only the core's unit tests (`cargo test -p resilix --lib`) and the mutated
# files' oracle tests (`oracles_for` below: their differential tests and idle-gap sweeps) for
# each mutant: 5-20 s a mutant instead of 80 s, because the other integration test binaries
# are not rebuilt. A mutant it misses may still be caught by another integration test or a doc
# test, so every survivor of a LIB_ONLY run is run again with the whole suite before it is
# reported.
#
# Results go to mutants.out/ (outcomes.json, caught.txt, missed.txt, unviable.txt); a missed
# mutant is a change to the code that no test noticed: either a test is missing or the change is
# equivalent (say why in mutants/REPORT.md). Needs `cargo install cargo-mutants --locked`.
set -euo pipefail
cd "$(dirname "$0")/.."
FILES=(
  "core/src/breaker/**/*.rs" "core/src/limiter/**/*.rs" "core/src/throttler/**/*.rs"
  "core/src/rate_limit/**/*.rs" "core/src/retry/**/*.rs" "core/src/bulkhead/**/*.rs"
  "core/src/mechanism/**/*.rs" "core/src/time/**/*.rs"
  "core/src/compose/pipeline.rs" "core/src/compose/call.rs" "core/src/compose/execute.rs"
)
args=()
if [ "${1:-}" = "--in-diff" ]; then
  args=(--in-diff "$2")
  for f in "${FILES[@]}"; do args+=(-f "$f"); done
elif [ $# -gt 0 ]; then
  for f in "$@"; do args+=(-f "$f"); done
else
  for f in "${FILES[@]}"; do args+=(-f "$f"); done
fi
# A mutant's build needs no debugger: without debug info each rebuild and link is smaller.
export CARGO_PROFILE_DEV_DEBUG="${CARGO_PROFILE_DEV_DEBUG:-0}"
# The integration tests that judge a file beside its unit tests: mostly the differential tests
# against the wide-time reference models and the idle-gap sweeps, which are the oracle for
# code whose unit tests pin edges but not every step of the arithmetic (the limiter's window
# close, the pipeline's call driver). Each runs in seconds.
oracles_for() {
  case "$1" in
    core/src/breaker/keyed*) echo differential_keyed_breaker ;;
    core/src/breaker/*) echo differential_breaker breaker_props timelines_breaker ;;
    core/src/limiter/*) echo differential_limiter limiter_behaviour limiter_props timelines_limiter ;;
    core/src/throttler/keyed*) echo differential_keyed_throttler ;;
    core/src/throttler/*) echo differential_throttler differential_throttler_reconfigure throttler_props ;;
    core/src/rate_limit/keyed*) echo differential_keyed_rate_limit ;;
    core/src/rate_limit/*) echo differential_rate_limit rate_limit_props timelines_rate_limit rate_limit_first_use ;;
    core/src/retry/budget/keyed*) echo differential_keyed_budget ;;
    core/src/retry/budget/circuit*) echo differential_retry_breaker retry_breaker_props ;;
    core/src/retry/budget/*) echo differential_budget differential_budget_reconfigure shared_budget ;;
    core/src/retry/*) echo differential_retry retry_props retry_jitter timelines_retry ;;
    core/src/bulkhead/keyed*) echo differential_keyed_bulkhead ;;
    core/src/bulkhead/*) echo differential_bulkhead bulkhead_props bulkhead_wait ;;
    core/src/mechanism/window*) echo timelines_windows differential_breaker differential_throttler ;;
    core/src/mechanism/keyed*) echo differential_keyed_breaker differential_keyed_bulkhead ;;
    core/src/mechanism/*) echo waiters bulkhead_wait differential_bulkhead ;;
    core/src/time/*) echo timelines_windows propagation_props deadlines ;;
    core/src/compose/*) echo execute pipeline call_timeout deadlines differential_pipeline waiters ;;
  esac
}
# The files a run mutates: those given, those a diff touches, or every one named above.
targets=()
if [ "${1:-}" = "--in-diff" ]; then
  mapfile -t targets < <(sed -n 's|^+++ b/||p' "$2")
elif [ $# -gt 0 ]; then
  targets=("$@")
else
  targets=("${FILES[@]}")
fi
test_args=()
# `--cargo-arg`, not `-- --lib`: the build step (`cargo test --no-run`) then builds the unit-test
# binary and the files' oracle tests alone instead of every integration test binary (about 80),
# which is most of a mutant's time with the whole suite.
if [ -n "${LIB_ONLY:-}" ]; then
  test_args=(--cargo-arg=--lib)
  for t in $(for f in "${targets[@]}"; do oracles_for "$f"; done | sort -u); do
    if [ -f "core/tests/$t.rs" ]; then test_args+=("--cargo-arg=--test=$t"); fi
  done
fi
# SKIP: unit tests not to run for each mutant, as libtest `--skip` filters, split on spaces (the
# throttler's statistical tests take most of the unit tests' time and judge no breaker or time
# code beyond what their own tests do); the report names what each file was judged by.
read -ra skip <<<"${SKIP:-}"
if [ ${#skip[@]} -gt 0 ]; then
  test_args+=(-- --)
  for s in "${skip[@]}"; do test_args+=(--skip "$s"); done
fi
# MUTANTS_ARGS: more cargo-mutants options, split on spaces (`--re 'ceiling'`, `--list`).
read -ra extra <<<"${MUTANTS_ARGS:-}"
# MUTANTS_RE: one regex of mutant names to test (spaces kept), e.g. a pass's survivors again.
if [ -n "${MUTANTS_RE:-}" ]; then extra+=(--re "$MUTANTS_RE"); fi
# Every feature on: code behind `alloc` (the `Arc` forwarders) is compiled and judged too, as
# CI's `cargo test -p resilix --all-features` does.
exec cargo mutants --no-shuffle --all-features -j "${JOBS:-1}" "${args[@]}" --output "${OUT:-.}" "${extra[@]}" "${test_args[@]}"
