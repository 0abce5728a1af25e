#!/usr/bin/env bash
# The public API of every published crate, written down in api/<crate>.txt (one item a line,
# with signatures; see scripts/public-api.py), so that any change to it shows in review.
#
#   bash scripts/public-api.sh           # regenerate api/*.txt after changing the API on purpose
#   bash scripts/public-api.sh --check   # CI: fail, with the diff, if the code and the files disagree
#
# Built from rustdoc's JSON output, which is unstable: RUSTC_BOOTSTRAP=1 lets the stable
# toolchain emit it, in its own target directory. Every feature is on (what docs.rs shows).
# The JSON format follows the toolchain, so the files are regenerated when it changes.
set -euo pipefail
cd "$(dirname "$0")/.."
CRATES=(resilix resilix-std resilix-tokio resilix-embassy resilix-async-std resilix-redis resilix-config)
OUT=api
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export CARGO_TARGET_DIR=${API_TARGET_DIR:-target/api}
for c in "${CRATES[@]}"; do
  RUSTC_BOOTSTRAP=1 cargo rustdoc -q -p "$c" --lib --all-features -- -Z unstable-options --output-format json
  python3 scripts/public-api.py "$CARGO_TARGET_DIR/doc/${c//-/_}.json" >"$TMP/$c.txt"
done
if [ "${1:-}" = "--check" ]; then
  status=0
  for c in "${CRATES[@]}"; do
    if ! diff -u "$OUT/$c.txt" "$TMP/$c.txt" >"$TMP/$c.diff"; then
      echo "public API of $c differs from $OUT/$c.txt (+ is the code, - the file):"
      head -200 "$TMP/$c.diff"
      status=1
    fi
  done
  if [ "$status" = 0 ]; then
    echo "public API: the code matches $OUT/*.txt ($(cat "$OUT"/*.txt | wc -l) items)"
  else
    echo "If the change is meant, run 'bash scripts/public-api.sh' and commit $OUT/ with it."
  fi
  exit "$status"
fi
mkdir -p "$OUT"
for c in "${CRATES[@]}"; do cp "$TMP/$c.txt" "$OUT/$c.txt"; done
wc -l "$OUT"/*.txt
