#!/usr/bin/env bash
# Runs the tests on a machine loaded on purpose, to find what only fails under load: the
# real-time suites (timers, wake-ups, schedulers) above all.
#
#   bash scripts/load-test.sh                   # defaults below
#   RUNS=0 RT_RUNS=20 bash scripts/load-test.sh # only the real-time suites, 20 times each
#   HOGS=0 bash scripts/load-test.sh            # the same runs on an unloaded machine
#
# 1. builds everything it will run, before loading the machine (so the load is on the tests,
#    and the builds are not timed against it);
# 2. starts HOGS CPU hogs (default 3 × nproc: with the tests' own threads, about four runnable
#    threads a core): `stress-ng --cpu` if it is installed, else busy loops in bash;
# 3. runs the README's `cargo test` RUNS times (default 3), then the real-time suites RT_RUNS
#    times each (default 50): `cargo test -p resilix-async-std` (behaviour, wait and timeline
#    tests on async-std and smol, on real time) and `cargo test -p resilix-tokio --test
#    wake_up` (the tokio real-time storm, which prints the longest stretches it observed);
# 4. saves every run's output in LOGS (default target/load-test/<date>), prints each failure's
#    log path and the end of its output, the wake-up storm's longest stretches, and the line
#    `load-test: N passed, M failed` (runs left out for lack of time are counted apart);
# 5. kills its hogs on any exit (trap EXIT).
#
# Bounded in time: each run is killed after RUN_TIMEOUT seconds (default 1800 for `cargo test`,
# 600 for a real-time suite; a killed run is a failure), and no new run starts after BUDGET
# seconds (default 5400) from the start. Exit status: 0 if every run passed, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
NPROC=$(nproc)
RUNS=${RUNS:-3}
RT_RUNS=${RT_RUNS:-50}
HOGS=${HOGS:-$((3 * NPROC))}
BUDGET=${BUDGET:-5400}
LOGS=${LOGS:-target/load-test/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$LOGS"
export CARGO_TERM_COLOR=never

# The suites: a name (for logs), a timeout, how many runs, and the command.
FULL=(cargo test)
ASYNC_STD=(cargo test -p resilix-async-std)
WAKE_UP=(cargo test -p resilix-tokio --test wake_up -- --nocapture)

echo "load-test: building before loading the machine"
if [ "$RUNS" -gt 0 ]; then "${FULL[@]}" --no-run -q; fi
if [ "$RT_RUNS" -gt 0 ]; then
  cargo test -p resilix-async-std --no-run -q
  cargo test -p resilix-tokio --test wake_up --no-run -q
fi

HOG_PIDS=()
stop_hogs() {
  local p
  for p in "${HOG_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${HOG_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  HOG_PIDS=()
}
trap stop_hogs EXIT
trap 'exit 130' INT TERM

if [ "$HOGS" -gt 0 ]; then
  if command -v stress-ng >/dev/null; then
    stress-ng --cpu "$HOGS" --timeout "$((BUDGET + 3600))s" --quiet &
    HOG_PIDS+=($!)
    echo "load-test: $HOGS stress-ng CPU hogs on $NPROC cores"
  else
    for _ in $(seq "$HOGS"); do
      # A busy loop that ends by itself too, should the trap never run (SIGKILL of this shell).
      bash -c 'end=$((SECONDS + '"$((BUDGET + 3600))"')); while [ $SECONDS -lt $end ]; do :; done' &
      HOG_PIDS+=($!)
    done
    echo "load-test: $HOGS bash busy-loop hogs on $NPROC cores"
  fi
fi

start=$SECONDS
passed=0 failed=0 skipped=0
FAILURES=()
run() {  # run NAME TIMEOUT COMMAND...
  local name=$1 limit=$2; shift 2
  if [ $((SECONDS - start)) -ge "$BUDGET" ]; then skipped=$((skipped + 1)); return 0; fi
  local log="$LOGS/$name.log" t0=$SECONDS rc=0
  timeout --signal=TERM --kill-after=30 "$limit" "$@" >"$log" 2>&1 || rc=$?
  if [ "$rc" = 0 ]; then
    passed=$((passed + 1))
    echo "  ok      $name ($((SECONDS - t0)) s)"
  else
    failed=$((failed + 1))
    FAILURES+=("$log")
    echo "  FAILED  $name ($((SECONDS - t0)) s, exit $rc$([ "$rc" = 124 ] && echo ': timed out'), log $log)"
    grep -E '^(test .* FAILED|thread .* panicked|---- )|assert' "$log" | head -8 | sed 's/^/          /' || true
  fi
}

for i in $(seq "$RUNS"); do run "cargo-test-$i" "${RUN_TIMEOUT:-1800}" "${FULL[@]}"; done
for i in $(seq "$RT_RUNS"); do
  run "async-std-$i" "${RUN_TIMEOUT:-600}" "${ASYNC_STD[@]}"
  run "wake-up-$i" "${RUN_TIMEOUT:-600}" "${WAKE_UP[@]}"
done
stop_hogs

echo
echo "load-test: logs in $LOGS; $HOGS hogs on $NPROC cores; $((SECONDS - start)) s under load"
if compgen -G "$LOGS/wake-up-*.log" >/dev/null; then
  # The storm's own report: the longest stretch of each kind over all runs.
  grep -h '^storm:' "$LOGS"/wake-up-*.log >"$LOGS/storm.txt" || true
  if [ -s "$LOGS/storm.txt" ]; then
    python3 - "$LOGS/storm.txt" <<'PY'
import re, sys
def ms(s):
    m = re.match(r'([\d.]+)(ns|µs|us|ms|s)$', s)
    v, u = float(m.group(1)), m.group(2)
    return v * {'ns': 1e-6, 'µs': 1e-3, 'us': 1e-3, 'ms': 1, 's': 1e3}[u]
rows = []
for line in open(sys.argv[1]):
    u = re.search(r'unclaimed slot with no release: (\S+)', line)
    c = re.search(r'claimed by a woken waiter: (\S+)', line)
    g = re.search(r'longest gap between two: (\S+)', line)
    b = re.search(r'barging caller: (\d+)', line)
    if u and c:
        rows.append((ms(u.group(1)), ms(c.group(1)), ms(g.group(1)) if g else 0, int(b.group(1)) if b else 0))
if rows:
    n = len(rows)
    for i, name in [(0, 'behind a free unclaimed slot'), (1, 'behind a claimed free slot'), (2, "sampler's own longest gap")]:
        v = sorted(r[i] for r in rows)
        print(f"wake-up storm, {name}: longest {v[-1]:.2f} ms, median of runs {v[n // 2]:.2f} ms ({n} runs)")
    print(f"wake-up storm, claimed slots taken by a barging caller: {sum(r[3] for r in rows)}")
PY
  fi
fi
for f in "${FAILURES[@]}"; do echo "failed: $f"; done
[ "$skipped" = 0 ] || echo "load-test: $skipped runs not started (past BUDGET=${BUDGET}s)"
echo "load-test: $passed passed, $failed failed"
[ "$failed" = 0 ]
