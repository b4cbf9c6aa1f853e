"""The mutation score of the rules, per package: how many one-line changes the tests notice.

`make mutants` runs mutmut (configured in pyproject.toml's ``[tool.mutmut]``: what is mutated,
which tests run) and then this script, which prints one row per package and every mutant
that survived, with the diff to read. A survivor is either a missing test (write it) or an
equivalent change (no behaviour can tell it apart: mark the line ``# pragma: no mutate`` with
the reason beside it). It is not a test and not part of `make test`: a whole run takes tens
of minutes on the 2-core CI machine (mutmut remembers finished mutants, so a second run only
re-tests what changed).

    python bench/mutation_score.py                # run mutmut, then summarize
    python bench/mutation_score.py 'bot.domain*'  # only these mutants (mutmut's names)
    python bench/mutation_score.py --no-run       # summarize the last run
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
from pathlib import Path

MUTMUT = Path(sys.executable).with_name("mutmut")
# Mutants are counted per package, else per module.
PACKAGES = ("bot.domain", "bot.storage", "bot.service.handlers", "bot.service.pipeline")
LINE = re.compile(r"^\s*(?P<name>[\w.ǁ]+__mutmut_\d+): (?P<status>.+)$")


def package_of(mutant: str) -> str:
    module = mutant.split(".x")[0]  # bot.domain.waivers.x_owner_of__mutmut_1 → bot.domain.waivers
    return next((p for p in PACKAGES if module.startswith(p + ".")), module)


def results() -> dict[str, str]:
    out = subprocess.run(
        [str(MUTMUT), "results", "--all", "true"], capture_output=True, text=True, check=True
    ).stdout
    found = {}
    for line in out.splitlines():
        match = LINE.match(line)
        if match:
            found[match["name"]] = match["status"].strip()
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-run", action="store_true", help="only summarize the last run")
    parser.add_argument("--diffs", action="store_true", help="show each survivor's diff")
    parser.add_argument("mutants", nargs="*", help="only these mutants, e.g. 'bot.domain*'")
    args = parser.parse_args()
    if not args.no_run:
        # mutmut draws a spinner on stderr; its verdicts are read afterwards.
        command = [str(MUTMUT), "run", *args.mutants]
        subprocess.run(command, stdout=subprocess.DEVNULL, check=False)
    verdicts = results()
    if not verdicts:
        print("No mutation results: run `make mutants` first.", file=sys.stderr)
        return 1
    table: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for name, status in verdicts.items():
        table[package_of(name)][status] += 1
    print(f"{'package':<22} {'mutants':>7} {'killed':>7} {'survived':>8} {'other':>6} {'score':>6}")
    total: collections.Counter[str] = collections.Counter()
    for package in sorted(table):
        counts = table[package]
        total += counts
        print(row(package, counts))
    print(row("all", total))
    survivors = sorted(n for n, s in verdicts.items() if s != "killed")
    if survivors:
        print(f"\nNot killed ({len(survivors)}):")
        for name in survivors:
            print(f"  {name}: {verdicts[name]}")
            if args.diffs:
                shown = subprocess.run(
                    [str(MUTMUT), "show", name], capture_output=True, text=True, check=False
                )
                print("    " + shown.stdout.strip().replace("\n", "\n    "))
    return 0


def row(package: str, counts: collections.Counter[str]) -> str:
    n, killed = sum(counts.values()), counts["killed"]
    # "caught by type check" is a kill too: mypy --strict is part of `make test`.
    killed += counts["caught by type check"]
    survived = counts["survived"]
    other = n - killed - survived
    score = f"{100 * killed / n:.1f}%" if n else "-"
    return f"{package:<22} {n:>7} {killed:>7} {survived:>8} {other:>6} {score:>6}"


if __name__ == "__main__":
    sys.exit(main())
