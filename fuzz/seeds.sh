#!/usr/bin/env bash
# Picks the kept seed corpus of each fuzz target (fuzz/seeds/<target>/, tracked) from a campaign's
# corpus (fuzz/corpus/<target>/, ignored): SEEDS inputs (default 40), a deterministic spread over
# the corpus sorted by size then name, from the smallest input to the largest, so the seeds keep
# both the short inputs and the long timelines a campaign grew. Replaces the target's seeds.
#
#   bash fuzz/seeds.sh                # every target that has a corpus
#   SEEDS=60 bash fuzz/seeds.sh retry # one target, 60 seeds
#
# Run it after `bash fuzz/campaign.sh` (which ends with `cargo fuzz cmin`, so every input it
# picks from added coverage), then commit fuzz/seeds/. CI's fuzz step starts each target from
# its seeds only.
set -euo pipefail
cd "$(dirname "$0")"
SEEDS=${SEEDS:-40}
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v '^resilix-fuzz$')
fi
for t in "${targets[@]}"; do
  [ -d "corpus/$t" ] || { echo "$t: no corpus/$t (run fuzz/campaign.sh $t first)"; continue; }
  mapfile -t files < <(find "corpus/$t" -maxdepth 1 -type f -printf '%s %f\n' | LC_ALL=C sort -k1,1n -k2,2 | cut -d' ' -f2)
  n=${#files[@]}
  [ "$n" -gt 0 ] || { echo "$t: corpus/$t is empty"; continue; }
  rm -rf "seeds/$t"
  mkdir -p "seeds/$t"
  k=$(( n < SEEDS ? n : SEEDS ))
  # Evenly spaced ranks 0 .. n-1 (the smallest and the largest always among them).
  for ((i = 0; i < k; i++)); do
    if [ "$k" -eq 1 ]; then r=0; else r=$(( i * (n - 1) / (k - 1) )); fi
    cp "corpus/$t/${files[$r]}" "seeds/$t/"
  done
  echo "$t: $(ls "seeds/$t" | wc -l) seeds of $n inputs ($(du -sh "seeds/$t" | cut -f1))"
done
