#!/usr/bin/env bash
# firmware/run.sh: run the resilix core on real targets and measure it. Exits non-zero on
# the first failure; prints the time of every step. Called from .ci/run.
#
#   1. host: the check scenarios against the checked-in host vectors (checks/src/expected.rs)
#   2. QEMU: the same scenarios as bare-metal firmware on Cortex-M0 (thumbv6m, no CAS: the
#      firmware picks portable-atomic's single-core cfg), Cortex-M4F (thumbv7em) and
#      RISC-V 32 (riscv32imac)
#   3. QEMU: the embassy program (Cortex-M4F, SysTick time driver, real timers)
#   4. Node: the wasm32 module (firmware/wasm/check.mjs)
#   5. footprint: a full pipeline at opt-level "z" on thumbv7em, flash and RAM, goal < 12 KiB
#   6. interrupt safety: no lock-based atomics on any policy path (source and binary checks)
#
# Environment: TOOLS (default ../shared/tools beside the checkout, else /work/shared/tools);
# RUN_V6M_CRITICAL_SECTION=1 also runs Cortex-M0 with portable-atomic's critical-section
# feature (the other end-user choice).
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
XC="$TOOLS/cross-check.sh"
QEMU="$TOOLS/qemu-run.sh"
MANIFEST="$HERE/Cargo.toml"
OUT="$HERE/target/cross-check"
cd "$ROOT"

TIMINGS=()
step() {  # step NAME COMMAND...   (ONLY=regex runs just the steps whose name matches)
  local name="$1"; shift
  if [ -n "${ONLY:-}" ] && ! [[ "$name" =~ $ONLY ]]; then return 0; fi
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

qemu_firmware() {  # TARGET [extra cross-check args]
  local t="$1"; shift
  "$XC" -q --manifest-path "$MANIFEST" -p resilix-tests-firmware -t "$t" --release \
    --run --runner "$QEMU" "$@"
}

host_vectors() {
  cargo test -q --manifest-path "$MANIFEST" -p resilix-firmware-checks --test vectors
}

embassy() {
  "$XC" -q --manifest-path "$MANIFEST" -p resilix-embassy-qemu -t thumbv7em-none-eabihf --release \
    --run --runner "$QEMU"
}

wasm() {
  "$XC" -q --manifest-path "$MANIFEST" -p resilix-wasm -t wasm32-unknown-unknown --release &&
    node "$HERE/wasm/check.mjs" "$OUT/wasm32-unknown-unknown/release/resilix_wasm.wasm"
}

# The size of one section of an ELF in bytes (0 if absent), from readelf (binutils reads
# any ELF; no llvm-size needed).
section() {
  local hex
  hex=$(readelf -SW "$1" | sed 's/^ *\[ *[0-9]*\] *//' | awk -v s="$2" '$1 == s { print $5 }')
  echo $(( 16#${hex:-0} ))
}

footprint() {
  "$XC" -q --manifest-path "$MANIFEST" -p resilix-footprint -t thumbv7em-none-eabihf -- --profile footprint || return 1
  local dir="$OUT/thumbv7em-none-eabihf/footprint"
  "$QEMU" "$dir/baseline" && "$QEMU" "$dir/pipeline" && "$QEMU" "$dir/pipeline_histogram" \
    || { echo "footprint programs failed under QEMU"; return 1; }
  footprint_of pipeline "every policy, no observer" || return 1
  footprint_of pipeline_histogram "the same + DurationHistogram observer" report-only
}

footprint_of() {  # PROGRAM DESCRIPTION [report-only]
  local dir="$OUT/thumbv7em-none-eabihf/footprint"
  declare -A B P
  for s in .vector_table .text .rodata .data .bss; do
    B[$s]=$(section "$dir/baseline" "$s"); P[$s]=$(section "$dir/$1" "$s")
  done
  local flash_b=$(( B[.vector_table] + B[.text] + B[.rodata] + B[.data] ))
  local flash_p=$(( P[.vector_table] + P[.text] + P[.rodata] + P[.data] ))
  local ram_b=$(( B[.data] + B[.bss] )) ram_p=$(( P[.data] + P[.bss] ))
  local flash_d=$(( flash_p - flash_b )) ram_d=$(( ram_p - ram_b ))
  printf 'footprint of %s: %s (thumbv7em-none-eabihf, opt-level "z", fat LTO), bytes:\n' "$1" "$2"
  printf '  %-20s %8s %8s %8s %8s %14s\n' program .text .rodata .data .bss "flash / RAM"
  printf '  %-20s %8s %8s %8s %8s %14s\n' baseline "${B[.text]}" "${B[.rodata]}" "${B[.data]}" "${B[.bss]}" "$flash_b / $ram_b"
  printf '  %-20s %8s %8s %8s %8s %14s\n' "$1" "${P[.text]}" "${P[.rodata]}" "${P[.data]}" "${P[.bss]}" "$flash_p / $ram_p"
  printf '  resilix = %s - baseline: flash %d B (.text %d + .rodata %d + .data image %d), RAM %d B\n' \
    "$1" "$flash_d" $(( P[.text] - B[.text] )) $(( P[.rodata] - B[.rodata] )) $(( P[.data] - B[.data] )) "$ram_d"
  if [ -z "${3:-}" ] && [ "$flash_d" -ge 12288 ]; then
    echo "footprint: a full pipeline takes $flash_d B of flash, over the 12 KiB goal"; return 1
  fi
}

sizes() {
  # size_of every policy on a 32-bit target, printed by the Cortex-M4F firmware run above.
  grep -E '^size_of ' "$HERE/target/sizes-thumbv7em.txt"
}

interrupt_safety() {
  # (a) Source: no policy state in a 64-bit or wider atomic, and no lock or spin anywhere in
  # the core. Policies take atomics only from crate::sync, which re-exports 32-bit ones.
  # Allowed: ManualClock (time/manual.rs), a test and simulator clock on no admit/settle path.
  local bad
  bad=$(grep -rnE 'Atomic(U|I)(64|128)|Mutex|RwLock|spin::|critical_section|SeqLock' "$ROOT/core/src" --include=*.rs \
        | grep -vE '^[^:]+:[0-9]+:\s*(//|\*)' | grep -v '/core/src/time/manual.rs:' || true)
  if [ -n "$bad" ]; then echo "lock-based or 64-bit atomic in the core:"; echo "$bad"; return 1; fi
  bad=$(grep -rn 'portable_atomic' "$ROOT/core/src" --include=*.rs | grep -vE '^[^:]+:[0-9]+:\s*(//|\*)' \
        | grep -v '/core/src/mechanism/sync.rs:' | grep -v '/core/src/time/manual.rs:' || true)
  if [ -n "$bad" ]; then echo "atomics imported around crate::sync:"; echo "$bad"; return 1; fi
  # (b) Binary: portable-atomic's lock-based fallback (its global seqlock table) must not be
  # linked into the full pipeline on Cortex-M4F. Control: the test firmware, which uses
  # ManualClock's AtomicU64, must contain it, or this check could not see it.
  # (grep -c, not grep -q: under pipefail an early exit would fail readelf with SIGPIPE.)
  local lock='portable_atomic.*fallback.*LOCKS' control found
  control=$(readelf -sW "$OUT/thumbv7em-none-eabihf/release/resilix-tests-firmware" | grep -cE "$lock" || true)
  found=$(readelf -sW "$OUT/thumbv7em-none-eabihf/footprint/pipeline" | grep -cE "$lock" || true)
  if [ "$control" = 0 ]; then
    echo "control failed: the seqlock table is not visible in the test firmware"; return 1
  fi
  if [ "$found" != 0 ]; then
    echo "the full pipeline links portable-atomic's lock-based fallback"; return 1
  fi
  echo "interrupt safety: no 64-bit/lock-based atomics in policy code; no fallback lock in the pipeline binary (control sees it in the test firmware)"
}

m4f() {
  qemu_firmware thumbv7em-none-eabihf | tee "$HERE/target/sizes-thumbv7em.txt"
  return "${PIPESTATUS[0]}"
}

mkdir -p "$HERE/target"
step "host vectors (x86_64)" host_vectors
step "QEMU Cortex-M4F (thumbv7em-none-eabihf)" m4f
step "QEMU Cortex-M0 (thumbv6m-none-eabi, --cfg portable_atomic_unsafe_assume_single_core)" \
  qemu_firmware thumbv6m-none-eabi --target-rustflags "thumbv6m-none-eabi=--cfg portable_atomic_unsafe_assume_single_core"
if [ "${RUN_V6M_CRITICAL_SECTION:-0}" = 1 ]; then
  step "QEMU Cortex-M0 (thumbv6m-none-eabi, portable-atomic critical-section)" \
    "$XC" -q --manifest-path "$MANIFEST" -p resilix-tests-firmware -t thumbv6m-none-eabi --release \
      -F critical-section --target-dir "$HERE/target/cross-check-cs" --run --runner "$QEMU"
fi
step "QEMU RISC-V 32 (riscv32imac-unknown-none-elf)" qemu_firmware riscv32imac-unknown-none-elf
step "QEMU embassy (thumbv7em-none-eabihf)" embassy
step "Node wasm32-unknown-unknown" wasm
step "footprint" footprint
step "size_of" sizes
step "interrupt safety" interrupt_safety
printf '%s\n' "run.sh: all passed; timings" "${TIMINGS[@]}"
