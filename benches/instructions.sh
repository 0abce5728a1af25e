#!/usr/bin/env bash
# Machine-independent cost per operation: instructions and atomic read-modify-writes, counted
# by callgrind (deterministic: the same figures on any x86-64 host, however loaded).
#
#   bash benches/instructions.sh                 # every subject
#   bash benches/instructions.sh pipeline-clock  # some
#   N=200000 bash benches/instructions.sh        # fewer ops per run (default 1,000,000)
#   PROFILE=release bash benches/instructions.sh  # a plain release build's counts (no LTO)
#
# Each subject (benches/examples/instructions.rs) runs N and then 2N operations under
# `valgrind --tool=callgrind --dump-instr=yes`; per-op figures are (count at 2N − count at N)
# / N, which cancels start-up. Instructions are callgrind's Ir. Atomic read-modify-writes are
# the executed instructions that carry a `lock` prefix, plus `xchg` with a memory operand
# (locked without one): each executed address's count from the dump, matched against
# `objdump -d` of the binary. So a `fetch_add` counts one, a compare-and-swap one per try.
# Needs valgrind, objdump (binutils) and python3. About 2 s per subject.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-1000000}
# The `instructions` profile (root Cargo.toml): release with one codegen unit and fat LTO, so the
# counts do not move with how an unrelated change partitions the binary. PROFILE=release counts
# what a user's plain `cargo build --release` runs (and criterion measures): no LTO, so a call
# across crates that LLVM may not inline stays a call.
PROFILE=${PROFILE:-instructions}
cargo build -q --profile "$PROFILE" -p resilix-benches --example instructions
BIN=target/$PROFILE/examples/instructions
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
objdump -d --no-show-raw-insn "$BIN" >"$OUT/dis"
if [ $# -eq 0 ]; then
  mapfile -t SUBJECTS < <("$BIN" --list)
else
  SUBJECTS=("$@")
fi
printf '%-28s %10s %10s\n' subject instr/op rmw/op
for s in "${SUBJECTS[@]}"; do
  for n in "$N" "$((2 * N))"; do
    valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file="$OUT/$s.$n" \
      "$BIN" "$s" "$n" >/dev/null 2>&1
  done
  python3 - "$OUT/dis" "$OUT/$s.$N" "$OUT/$s.$((2 * N))" "$N" "$s" <<'PY'
import re, sys
dis, small, large, n, subject = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
# Addresses of locked instructions in the binary (as objdump prints them: file offsets).
locked = set()
for line in open(dis):
    m = re.match(r'^\s+([0-9a-f]+):\s+(.*)$', line)
    if m:
        ins = m.group(2)
        if ins.startswith('lock ') or (ins.startswith('xchg') and '(' in ins):
            locked.add(int(m.group(1), 16))
def counts(path):
    """Total Ir, and executions per instruction address (the binary's own addresses)."""
    per, addr, total, base = {}, 0, 0, None
    skip = False
    for line in open(path):
        line = line.rstrip('\n')
        if line.startswith('summary:') or line.startswith('totals:'):
            total = int(line.split()[1])
            continue
        if line.startswith('calls='):
            skip = True  # the next cost line is the call's inclusive cost, not this line's
            continue
        m = re.match(r'^(0x[0-9a-f]+|\+\d+|-\d+|\*)\s+\S+\s+(\d+)$', line)
        if not m:
            continue
        a = m.group(1)
        if a.startswith('0x'):
            addr = int(a, 16)
        elif a[0] == '+':
            addr += int(a[1:])
        elif a[0] == '-':
            addr -= int(a[1:])
        if skip:
            skip = False
            continue
        per[addr] = per.get(addr, 0) + int(m.group(2))
    return total, per
t1, p1 = counts(small)
t2, p2 = counts(large)
# callgrind reports run-time addresses: the binary's own for a non-PIE binary, or offset by
# valgrind's load address for a PIE one; take the candidate that finds locked instructions.
def rmws(per, base):
    return sum(c for a, c in per.items() if a - base in locked)
bases = [0, 0x108000, 0x400000, 0x4000000]
base = max(bases, key=lambda b: rmws(p2, b))
ir = (t2 - t1) / n
rmw = (rmws(p2, base) - rmws(p1, base)) / n
print(f'{subject:<28} {ir:>10.1f} {rmw:>10.2f}')
PY
done
