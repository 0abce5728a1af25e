#!/usr/bin/env bash
# Mutation testing of the core's decision and state files with cargo-mutants (issue 21).
#
#   bash scripts/mutants.sh                                  # every file named below (hours)
#   bash scripts/mutants.sh core/src/mechanism/slots.rs      # the files given
#   bash scripts/mutants.sh --in-diff changes.diff           # only what a diff touches (CI-sized)
#   LIB_ONLY=1 bash scripts/mutants.sh core/src/time/era.rs  # judged by the unit tests alone
#   MUTANTS_ARGS="--re ceiling" bash scripts/mutants.sh core/src/retry/backoff.rs  # some mutants
#
# LIB_ONLY=1 runs only the core's unit tests (`cargo test -p resilix --lib`) for each mutant:
# about 20 s a mutant instead of 80 s, because the forty-odd integration test binaries are not
# rebuilt. A mutant it misses may still be caught by an integration, differential or doc test,
# so every survivor of a LIB_ONLY run is run again with the whole suite before it is reported.
#
# Results go to mutants.out/ (outcomes.json, caught.txt, missed.txt, unviable.txt); a missed
# mutant is a change to the code that no test noticed: either a test is missing or the change is
# equivalent (say why in mutants/REPORT.md). Needs `cargo install cargo-mutants --locked`.
set -euo pipefail
cd "$(dirname "$0")/.."
FILES=(
  "core/src/breaker/**/*.rs" "core/src/limiter/**/*.rs" "core/src/throttler/**/*.rs"
  "core/src/rate_limit/**/*.rs" "core/src/retry/**/*.rs" "core/src/bulkhead/**/*.rs"
  "core/src/mechanism/*.rs" "core/src/time/**/*.rs"
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
test_args=()
# `--cargo-arg`, not `-- --lib`: the build step (`cargo test --no-run`) then builds the unit-test
# binary alone instead of every integration test binary, about half of each mutant's time.
if [ -n "${LIB_ONLY:-}" ]; then test_args=(--cargo-arg=--lib); fi
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
# Every feature on: code behind `alloc` (the `Arc` forwarders) is compiled and judged too, as
# CI's `cargo test -p resilix --all-features` does.
exec cargo mutants --no-shuffle --all-features -j "${JOBS:-1}" "${args[@]}" --output "${OUT:-.}" "${extra[@]}" "${test_args[@]}"
