#!/usr/bin/env bash
# Every citation of the design documents in the code names a file that is in the repository:
# a line of code or rustdoc that cites the contracts, the behaviour spec or the essay must carry
# the path of that document under docs/design/, and the path must exist. Fails with the lines
# that do not.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=0
while IFS= read -r hit; do
  line=${hit#*:*:}
  paths=$(grep -oE 'docs/design/[A-Za-z0-9_.-]+\.md' <<<"$line" || true)
  if [ -z "$paths" ]; then
    echo "no path to the cited document: $hit"; bad=1; continue
  fi
  for p in $paths; do
    [ -f "$p" ] || { echo "cites a file that does not exist ($p): $hit"; bad=1; }
  done
done < <(git grep -nE 'DESIGN\.md|spec( \S+)? §|[Tt]he essay|contracts\.md|spec\.md|essay\.md' -- \
  core/src adapter-*/src sim/src reference/src redis/src config/src testkit/src workers/wasm/src || true)
[ "$bad" = 0 ] && echo "design citations: every one names a file in docs/design/"
exit "$bad"
