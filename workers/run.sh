#!/usr/bin/env bash
# workers/run.sh: the resilix Worker in workerd, against a flaky upstream on loopback.
# Exits non-zero on the first failure; prints the time of every step. Called from .ci/run.
#
#   1. Node.js and npm (the machine's; Debian's packages if there are none)
#   2. workerd, pinned in package.json / package-lock.json, into workers/node_modules (npm ci)
#   3. rustfmt and clippy on the wasm crate (its own workspace: the root's never see it)
#   4. the wasm module: wasm/ for wasm32-unknown-unknown (../shared/tools/cross-check.sh,
#      which builds `core` from source: no rustup target needed), copied to build/, its size
#   5. test/run.mjs: starts the upstream and workerd on free loopback ports, checks the time
#      rule inside workerd, sends 200 requests through the Worker, checks the upstream's log,
#      and stops both
#
# Environment: TOOLS (default ../shared/tools beside the checkout, else /work/shared/tools).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
TOOLS=${TOOLS:-}
if [ -z "$TOOLS" ]; then
  for d in "$ROOT/../shared/tools" "$ROOT/../../shared/tools" /work/shared/tools; do
    [ -x "$d/cross-check.sh" ] && TOOLS=$(cd "$d" && pwd) && break
  done
fi
[ -n "$TOOLS" ] && [ -x "$TOOLS/cross-check.sh" ] || { echo "run.sh: set TOOLS to the folder with cross-check.sh" >&2; exit 2; }
cd "$HERE"

WASM_OUT="$HERE/target/cross-check/wasm32-unknown-unknown/release/resilix_workers.wasm"
PID_FILE="$HERE/build/workerd.pid"
DRIVER_PID=""
cleanup() {
  # The driver stops workerd itself; this is for an interrupted or timed-out run.
  if [ -n "$DRIVER_PID" ] && kill -0 "$DRIVER_PID" 2>/dev/null; then kill "$DRIVER_PID" 2>/dev/null || true; fi
  if [ -f "$PID_FILE" ]; then
    local pid; pid=$(cat "$PID_FILE")
    if kill -0 "$pid" 2>/dev/null; then kill "$pid" 2>/dev/null || true; fi
    rm -f "$PID_FILE"
  fi
}
trap cleanup EXIT INT TERM

TIMINGS=()
step() {  # step NAME COMMAND...
  local name="$1"; shift
  local start=$SECONDS
  echo "==> $name"
  if "$@"; then
    TIMINGS+=("$(printf '%4ss  ok    %s' $((SECONDS - start)) "$name")")
  else
    TIMINGS+=("$(printf '%4ss  FAIL  %s' $((SECONDS - start)) "$name")")
    printf '%s\n' "run.sh: timings" "${TIMINGS[@]}" >&2
    echo "run.sh: FAILED at: $name" >&2
    exit 1
  fi
}

node_and_npm() {
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "no node/npm on PATH: installing Debian's nodejs and npm"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
  fi
  local major; major=$(node -p 'process.versions.node.split(".")[0]')
  echo "node $(node --version), npm $(npm --version)"
  [ "$major" -ge 18 ] || { echo "node 18 or later is needed (global fetch)"; return 1; }
}

install_workerd() {
  # --ignore-scripts: workerd's postinstall only re-links the platform binary, which the
  # package's own bin script finds without it.
  timeout 300 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error &&
    node -e 'const w = require("workerd"); console.log(`workerd ${w.version} (${w.default})`)'
}

build_wasm() {
  timeout 600 "$TOOLS/cross-check.sh" -q --manifest-path "$HERE/Cargo.toml" -p resilix-workers \
    -t wasm32-unknown-unknown --release || return 1
  mkdir -p "$HERE/build" && cp "$WASM_OUT" "$HERE/build/resilix.wasm"
  local raw gz
  raw=$(wc -c <"$HERE/build/resilix.wasm"); gz=$(gzip -9 -c "$HERE/build/resilix.wasm" | wc -c)
  echo "wasm module: $raw bytes ($gz gzipped), wasm32-unknown-unknown, opt-level \"z\", fat LTO"
  node -e '
    const m = new WebAssembly.Module(require("fs").readFileSync(process.argv[1]));
    const imports = WebAssembly.Module.imports(m).map((i) => `${i.module}.${i.name}`);
    console.log(`imports: ${imports.join(", ")}; exports: ${WebAssembly.Module.exports(m).length}`);
    if (imports.join() !== "resilix_host.random_u32") { console.log("unexpected imports"); process.exit(1); }
  ' "$HERE/build/resilix.wasm"
}

lint() {
  # The wasm crate is outside the main workspace, so the root's fmt and clippy never see it.
  cargo fmt --manifest-path "$HERE/Cargo.toml" --all -- --check &&
    timeout 600 cargo clippy -q --manifest-path "$HERE/Cargo.toml" --all-targets -- -D warnings
}

run_workerd() {
  WORKERD_PID_FILE="$PID_FILE" timeout 180 node "$HERE/test/run.mjs" &
  DRIVER_PID=$!
  wait "$DRIVER_PID"
}

step "Node.js" node_and_npm
step "workerd from npm (pinned, npm ci)" install_workerd
step "rustfmt and clippy (the wasm crate, checked on the host)" lint
step "wasm module (wasm32-unknown-unknown)" build_wasm
step "workerd: the Worker against a flaky upstream" run_workerd
printf '%s\n' "run.sh: all passed; timings" "${TIMINGS[@]}"
