#!/usr/bin/env bash
# Regenerates docs/performance.md: every measured cost per call beside its peer, on this host,
# written whole (never appended to). Run it on an idle machine: it runs every criterion bench
# (about 7 minutes on 2 cores), then bench-summary, then the instruction counts if valgrind is
# installed.
#
#   bash scripts/perf-report.sh                # everything
#   BENCHES="--bench async_overhead" bash scripts/perf-report.sh   # some benches only
set -euo pipefail
cd "$(dirname "$0")/.."

out=docs/performance.md
baseline="perf-$(date -u +%Y%m%d%H%M)"
# shellcheck disable=SC2086
cargo bench -p resilix-benches ${BENCHES:-} -- --save-baseline "$baseline" >/dev/null
summary="$(cargo run --release -q -p resilix-benches --bin bench-summary -- --baseline "$baseline")"
instructions=""
if command -v valgrind >/dev/null; then instructions="$(bash benches/instructions.sh)"; fi

{
  echo "# Performance"
  echo
  echo "What each policy costs per call, beside the crate a user would otherwise pick, in the"
  echo "same run. Regenerated whole by \`bash scripts/perf-report.sh\`; earlier runs are in git."
  echo
  echo "- Host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
  echo "- Date: $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD)"
  echo "- Load average when the benches started: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "- Command: \`cargo bench -p resilix-benches ${BENCHES:-}-- --save-baseline $baseline\`, then \`bench-summary -- --baseline $baseline\`"
  echo
  echo "$summary"
  if [ -n "$instructions" ]; then
    echo
    echo "## Instructions and atomic read-modify-writes per operation"
    echo
    echo "Counted by callgrind (\`bash benches/instructions.sh\`): the same on any x86-64 host."
    echo
    echo '```text'
    echo "$instructions"
    echo '```'
  fi
} >"$out"
echo "wrote $out"
