#!/usr/bin/env bash
# Every citation of the design documents names a file that is in the repository, and every
# `docs/design/<note>.md#<anchor>` names a heading of that file:
# - a line of code or rustdoc that cites the contracts, the behaviour spec or the essay must carry
#   the path of that document under docs/design/, and the path must exist;
# - every `docs/design/<file>.md` named in the code, in ARCHITECTURE.md or in docs/design/ must
#   exist, and an `#anchor` after it must be the GitHub slug of one of that file's headings
#   (lower case, punctuation other than `-` and `_` dropped, spaces as `-`).
# Fails with the lines that do not.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=0
roots=(core/src adapter-*/src sim/src reference/src redis/src config/src testkit/src workers/wasm/src)

# The GitHub anchors of a markdown file's headings, one a line.
anchors() {
  grep -E '^#{1,6} ' "$1" | sed -E 's/^#+ +//' | tr '[:upper:]' '[:lower:]' |
    sed -E 's/[^a-z0-9 _-]//g; s/ /-/g'
}

while IFS= read -r hit; do
  line=${hit#*:*:}
  paths=$(grep -oE 'docs/design/[A-Za-z0-9_.-]+\.md' <<<"$line" || true)
  if [ -z "$paths" ]; then
    echo "no path to the cited document: $hit"; bad=1; continue
  fi
done < <(git grep -nE 'DESIGN\.md|spec( \S+)? §|[Tt]he essay|contracts\.md|spec\.md|essay\.md' -- \
  "${roots[@]}" || true)

while IFS= read -r hit; do
  line=${hit#*:*:}
  for ref in $(grep -oE 'docs/design/[A-Za-z0-9_./-]+\.md(#[A-Za-z0-9_-]+)?' <<<"$line"); do
    p=${ref%%#*}
    if [ ! -f "$p" ]; then
      echo "cites a file that does not exist ($p): $hit"; bad=1; continue
    fi
    if [[ $ref == *"#"* ]]; then
      a=${ref#*#}
      anchors "$p" | grep -qxF -- "$a" ||
        { echo "cites a heading that does not exist ($ref): $hit"; bad=1; }
    fi
  done
done < <(git grep --untracked -nE 'docs/design/' -- "${roots[@]}" ARCHITECTURE.md 'docs/design/*.md' || true)

[ "$bad" = 0 ] && echo "design citations: every one names a file (and heading) in docs/design/"
exit "$bad"
