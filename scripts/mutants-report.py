#!/usr/bin/env python3
"""Per-file mutation scores from cargo-mutants' outcome files (mutants/REPORT.md's tables).

    python3 scripts/mutants-report.py RUN/mutants.out/outcomes.json [MORE.json ...]
    python3 scripts/mutants-report.py --missed RUN/mutants.out/outcomes.json ...

Each file is one pass; a mutant judged by several passes keeps its latest verdict (a later pass
re-judges a survivor with new tests, or a timeout with a longer limit), so give the passes in
the order they ran. Prints a Markdown table: mutants, caught, timeouts, missed, unviable, and
the score, (caught + timeouts) / (caught + timeouts + missed). A timed-out mutant made a test
hang, so the suite does not pass with it: it counts as caught. Equivalent mutants are excluded
in `.cargo/mutants.toml` (with the reason beside each), so they are in no outcome file.
`--missed` lists the survivors instead, one name a line.
"""
import json
import sys
from collections import OrderedDict

VERDICT = {
    "CaughtMutant": "caught",
    "MissedMutant": "missed",
    "Timeout": "timeout",
    "Unviable": "unviable",
}


def verdicts(paths):
    """Mutant name -> (file, verdict), the latest pass winning."""
    latest = OrderedDict()
    for path in paths:
        with open(path) as f:
            for outcome in json.load(f)["outcomes"]:
                scenario = outcome["scenario"]
                if not isinstance(scenario, dict) or "Mutant" not in scenario:
                    continue  # the unmutated baseline
                mutant = scenario["Mutant"]
                verdict = VERDICT.get(outcome["summary"])
                if verdict is None:
                    continue  # a failed baseline or an interrupted mutant: no verdict
                latest[mutant["name"]] = (mutant["file"], verdict)
    return latest


def main(argv):
    missed_only = argv[:1] == ["--missed"]
    paths = argv[1:] if missed_only else argv
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    latest = verdicts(paths)
    if missed_only:
        for name, (_, verdict) in latest.items():
            if verdict == "missed":
                print(name)
        return 0
    files = {}
    for file, verdict in latest.values():
        row = files.setdefault(file, dict.fromkeys(VERDICT.values(), 0))
        row[verdict] += 1
    total = dict.fromkeys(VERDICT.values(), 0)
    print("| file | mutants | caught | timeouts | missed | unviable | score |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for file in sorted(files):
        row = files[file]
        for k in total:
            total[k] += row[k]
        print(line(f"`{file}`", row))
    print(line("**total**", total))
    return 0


def line(name, row):
    judged = row["caught"] + row["timeout"] + row["missed"]
    score = f"{100 * (row['caught'] + row['timeout']) / judged:.1f}%" if judged else "—"
    count = sum(row.values())
    return (f"| {name} | {count} | {row['caught']} | {row['timeout']} | {row['missed']} "
            f"| {row['unviable']} | {score} |")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
