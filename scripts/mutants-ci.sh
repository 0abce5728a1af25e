#!/usr/bin/env bash
# The CI-sized mutation step (issue 21): mutate only the lines of the core's decision and state
# files (the list in scripts/mutants.sh) that changed since a base commit, judge each mutant by
# the core's unit tests, and fail if any mutant survives.
#
#   bash scripts/mutants-ci.sh              # against mutants/ci-base (the last stop's commit)
#   BASE=origin/main bash scripts/mutants-ci.sh
#
# The base: `BASE` if set; else the commit in mutants/ci-base, the main branch as it was when
# the previous batch of work landed (so CI judges everything that batch changed, not only its
# last commit); else, in a clone without that commit, HEAD~1.
#
# Capped two ways, so it fits the CI budget whatever the change:
# * MUTANTS_CI_MAX (default 16) mutants at most: a larger diff is sampled evenly across its
#   mutants (cargo-mutants `--shard 0/N --sharding round-robin`), and the message says how many
#   were left out;
# * MUTANTS_CI_SECONDS (default 300) of wall time: past it the run is stopped, what was judged
#   still counts (a missed mutant fails the step), and the message says the rest was not run.
# A cap is a sample, not a pass: the full measure is `bash scripts/mutants.sh` (mutants/REPORT.md).
#
# Exit status: 0 when every judged mutant was caught (or none was touched), 1 when one survived
# or the tool failed. A timed-out mutant (a mutant that made a test hang) counts as caught.
# Installs cargo-mutants (27.1.0, a debug build: 90 CPU-seconds instead of 360 for a release
# one, and it only orchestrates) when it is missing and there is something to mutate.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${BASE:-}" ]; then
  BASE=HEAD~1
  recorded=$(tr -d '[:space:]' <mutants/ci-base 2>/dev/null || true)
  if [ -n "$recorded" ] && git cat-file -e "$recorded^{commit}" 2>/dev/null; then
    BASE=$recorded
  fi
fi
MAX="${MUTANTS_CI_MAX:-16}"
SECONDS_CAP="${MUTANTS_CI_SECONDS:-300}"
OUT="${OUT:-target/mutants-ci}"
mkdir -p "$OUT"
diff_file="$OUT/change.diff"

# The working tree against the base: what cargo-mutants sees in its copy of the tree.
git diff "$BASE" -- core/src >"$diff_file"
if [ ! -s "$diff_file" ]; then
  echo "mutants-ci: the core's sources are unchanged since $BASE: nothing to mutate"
  exit 0
fi
echo "mutants-ci: the core's sources changed since $(git rev-parse --short "$BASE")"
if ! command -v cargo-mutants >/dev/null; then
  cargo install cargo-mutants@27.1.0 --locked --debug -q
fi

list="$OUT/list.txt"
MUTANTS_ARGS="--list" LIB_ONLY=1 bash scripts/mutants.sh --in-diff "$diff_file" >"$list"
count=$(grep -c . "$list" || true)
if [ "$count" -eq 0 ]; then
  echo "mutants-ci: the change touches no mutable code of the files scripts/mutants.sh names"
  exit 0
fi
shard=""
planned=$count
if [ "$count" -gt "$MAX" ]; then
  n=$(((count + MAX - 1) / MAX))
  planned=$(((count + n - 1) / n))
  shard="--shard 0/$n --sharding round-robin"
  echo "mutants-ci: $count mutants in the change; testing one in $n ($planned)," \
    "the rest is left to the full run"
else
  echo "mutants-ci: $count mutants in the change"
fi

rc=0
MUTANTS_ARGS="$shard" LIB_ONLY=1 OUT="$OUT" timeout --signal=INT --kill-after=60 "$SECONDS_CAP" \
  bash scripts/mutants.sh --in-diff "$diff_file" || rc=$?

results="$OUT/mutants.out"
judged() { if [ -f "$results/$1.txt" ]; then grep -c . "$results/$1.txt" || true; else echo 0; fi; }
caught=$(judged caught) missed=$(judged missed) timeouts=$(judged timeout) unviable=$(judged unviable)
echo "mutants-ci: caught $caught, missed $missed, timed out $timeouts, unviable $unviable"
if [ "$missed" -gt 0 ]; then
  echo "mutants-ci: FAILED: these mutants survived the unit tests (add a test that kills each,"
  echo "or list it as equivalent in mutants/REPORT.md and exclude it in .cargo/mutants.toml):"
  cat "$results/missed.txt"
  exit 1
fi
case "$rc" in
  0 | 3) echo "mutants-ci: every judged mutant was caught" ;;
  124 | 130)
    done=$((caught + timeouts + unviable))
    if [ "$done" -ge "$planned" ]; then
      echo "mutants-ci: every judged mutant was caught (the ${SECONDS_CAP}s cap came after the last)"
    else
      echo "mutants-ci: stopped at the ${SECONDS_CAP}s cap after $done of $planned mutants; those" \
        "were all caught, the other $((planned - done)) were NOT run"
    fi
    ;;
  *)
    echo "mutants-ci: FAILED: cargo-mutants exited with $rc (4: the unmutated tests fail," \
      "5/6: the diff does not match the tree); see $results/debug.log"
    exit 1
    ;;
esac
