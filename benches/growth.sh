#!/usr/bin/env bash
# How cost grows with N, machine-independently: instructions per operation, counted by
# callgrind, for the keyed tables from 1 key to their capacity (hit, miss, eviction), the time
# windows from 1 to 1,000 buckets, and the bulkhead's wait queue from 0 waiters to its capacity.
# Writes docs/perf/growth.csv and draws docs/perf/{keyed-rate-limit,keyed-breaker,windows,
# waiters}.svg from it.
#
#   bash benches/growth.sh                       # every subject, every N
#   bash benches/growth.sh keyed-rate-limit-hit  # some subjects (the CSV keeps the others' rows)
#   OPS=500 bash benches/growth.sh               # fewer operations per run (default 2,000)
#
# The subjects are benches/examples/growth.rs. Each (subject, N) is one run under
# `valgrind --tool=callgrind --toggle-collect='*growth_op*'`: callgrind counts only inside the
# measured operation's own function, so the setup each call needs (a table filled back to N
# keys) is not in the figure, and instructions per op = the run's total / OPS. Needs valgrind.
# The same figures on any x86-64 host, however loaded (the compiler and its flags aside).
set -euo pipefail
cd "$(dirname "$0")/.."
OPS=${OPS:-2000}
KEYS="1 16 64 256 512 768 896 1024"
IN_USE="0 256 512 768 896 960 1024"
BUCKETS="1 10 50 100 200 500 1000"
WAITING="0 1 16 64 128 192 255 256"
cargo build -q --release -p resilix-benches --example growth
BIN=target/release/examples/growth
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
mkdir -p docs/perf
CSV=docs/perf/growth.csv
if [ $# -eq 0 ]; then
  mapfile -t SUBJECTS < <("$BIN" --list)
else
  SUBJECTS=("$@")
fi
xs() {
  case "$1" in
    *-evict) echo "$IN_USE" ;;
    keyed-*) echo "$KEYS" ;;
    *-window*) echo "$BUCKETS" ;;
    wait-queue) echo "$WAITING" ;;
    *) echo "no N list for $1" >&2; exit 2 ;;
  esac
}
# Keep the rows of subjects not re-measured.
{
  echo "subject,n,instructions_per_op,ops"
  if [ -f "$CSV" ]; then
    tail -n +2 "$CSV" | while IFS=, read -r s rest; do
      keep=1
      for m in "${SUBJECTS[@]}"; do [ "$s" = "$m" ] && keep=0; done
      [ $keep -eq 1 ] && echo "$s,$rest"
    done
  fi
} >"$OUT/rows.csv"
printf '%-26s %6s %12s\n' subject N instr/op
for s in "${SUBJECTS[@]}"; do
  for x in $(xs "$s"); do
    valgrind --tool=callgrind --toggle-collect='*growth_op*' \
      --callgrind-out-file="$OUT/cg" "$BIN" "$s" "$x" "$OPS" >/dev/null 2>"$OUT/err" ||
      { cat "$OUT/err" >&2; exit 1; }
    total=$(awk '/^(summary|totals):/ { print $2; exit }' "$OUT/cg")
    per=$(python3 -c "print(f'{$total / $OPS:.1f}')")
    printf '%-26s %6s %12s\n' "$s" "$x" "$per"
    echo "$s,$x,$per,$OPS" >>"$OUT/rows.csv"
  done
done
{
  head -n 1 "$OUT/rows.csv"
  tail -n +2 "$OUT/rows.csv" | sort -t, -k1,1 -k2,2n
} >"$CSV"
"$BIN" plot "$CSV" docs/perf
echo "wrote $CSV and docs/perf/*.svg"
