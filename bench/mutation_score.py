"""The mutation score of the rules: how many one-line changes the tests notice, per suite.

`make mutants` runs mutmut over the rules in suites, each with the tests that cover it, so that
one suite fits a nightly job on the 2-core CI machine; then it prints a row per module and every
mutant left alive, with its diff. A survivor is either a missing test (write it) or an
equivalent change: no input or state can tell it apart from the code. Equivalents are listed,
each with its reason, in ``bench/equivalent_mutants.toml``, matched by function and changed line
(not by mutmut's numbers, which move when the module changes); the score leaves them out.

Each suite runs in its own folder ``.mutation/SUITE/`` (links to the project, and a
pyproject.toml whose ``[tool.mutmut]`` gets the suite's modules and tests), so suites keep their
results apart and a second run re-tests only what changed.

    python bench/mutation_score.py                  # every suite: run mutmut, then summarize
    python bench/mutation_score.py rules records    # these suites
    python bench/mutation_score.py --no-run rules   # summarize the last run of a suite
    python bench/mutation_score.py --list           # the suites, their modules and tests
    python bench/mutation_score.py --tests-added pipeline  # tests were only added: see below

mutmut forgets every verdict when a suite's list of tests changes. When tests were only added,
``--tests-added`` keeps them: a mutant a test killed is still killed with more tests, so the
suite's stored fingerprint of its test list is brought up to date, mutmut runs what it has not
run yet (and the functions changed since), and then every survivor again with the new tests
(but the listed equivalents, which no test can kill).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / ".mutation"
MUTMUT = Path(sys.executable).with_name("mutmut")
EQUIVALENTS = ROOT / "bench" / "equivalent_mutants.toml"
# What a suite's folder links to: everything the tests read (mutmut copies these).
LINKED = ("bot", "tests", "adapters", "deploy", "docs", "bench", "README.md", "Makefile")
LINE = re.compile(r"^\s*(?P<name>[\w.ǁ]+__mutmut_\d+): (?P<status>.+)$")

# The gate-level tests that drive the rules through the commands a release uses.
GATE = [
    "tests/test_gate.py",
    "tests/test_gate_guards.py",
    "tests/test_holds.py",
    "tests/test_pinning.py",
    "tests/test_waivers.py",
    "tests/test_waivers_bind.py",
    "tests/test_late_files.py",
    "tests/test_properties.py",
    "tests/test_manifest_kinds.py",
    "tests/test_typed_text.py",
]


# Tests that drive a real `relbot run` subprocess and kill it: mutmut learns which tests
# reach a mutant from this process only, and under its trampolines the subprocess never gets
# as far as the plan (the suite's first, clean run fails on them). They test the journal's
# kill points, not rules a one-line change in these modules would flip unseen.
NOT_UNDER_MUTMUT = ["--ignore=tests/announcing/test_announce_once_console.py"]


@dataclasses.dataclass(frozen=True)
class Suite:
    what: str
    mutate: list[str]
    tests: list[str]


def _domain(*modules: str) -> list[str]:
    return [f"bot/domain/{m}.py" for m in modules]


SUITES = {
    "rules": Suite(
        "what becomes public and who may act",
        _domain(
            "authority",
            "blockers",
            "claims",
            "confirmation",
            "files",
            "folders",
            "late",
            "plan",
            "readiness",
            "waivers",
        ),
        # test_staging_stall: files that cannot be the artifact, judged through the commands
        ["tests/domain", "tests/signatures/test_login.py", *GATE, "tests/test_staging_stall.py"],
    ),
    "records": Suite(
        "what is sent to python.org",
        [*_domain("records"), "bot/pydotorg/registry.py", "bot/http_client.py"],
        [
            "tests/domain",
            "tests/registry",
            "tests/test_http_client.py",
            "tests/test_gate_registry.py",
            "tests/test_windows_index_registry.py",
        ],
    ),
    "domain": Suite(
        "the other rules: commands, the announcement, the journal's fold, profiles, tags",
        _domain(
            "announcement",
            "commands",
            "history",
            "login",
            "profile",
            "release_cycle",
            "signing",
            "signing_plan",
            "tags",
            "text",
            "windows_index",
        ),
        [
            "tests/domain",
            "tests/signatures",
            "tests/announcing",
            *NOT_UNDER_MUTMUT,
            "tests/test_release_cycle.py",
            "tests/test_sign_at_confirmation.py",
            "tests/test_config.py",
            "tests/test_misconfiguration.py",
            "tests/test_index_inspector.py",
            "tests/storage/test_windows_index_gate.py",
            *GATE,
        ],
    ),
    "storage": Suite(
        "the bytes, written once over both backends: the freeze, the promotion, the work area",
        [
            f"bot/storage/{m}.py"
            for m in (
                "aside",
                "freezer",
                "listing",
                "lock",
                "overlap",
                "promotion",
                "walk",
                "workarea",
            )
        ],
        ["tests/storage", "tests/test_hostile_staging.py", "tests/test_full_disk.py"],
    ),
    "backends": Suite(
        "the filesystems under them: folders of this machine, and SFTP to a server",
        [
            f"bot/storage/{m}.py"
            for m in (
                "local",
                "local_fs",
                "primitives",
                "remote_copy",
                "remote_hash",
                "remote_list",
                "remote_stat",
                "sftp",
                "sftp_check",
                "sftp_files",
                "sftp_fs",
                "sftp_small",
                "sftp_stream",
                "ssh",
            )
        ],
        ["tests/storage", "tests/test_hostile_staging.py", "tests/test_full_disk.py"],
    ),
    "pipeline": Suite(
        "the publish's steps and their journal, and the commands' handlers",
        ["bot/service/pipeline/*", "bot/service/handlers/*"],
        [
            *GATE,
            "tests/test_pipeline_steps.py",
            "tests/test_rehearsal.py",
            "tests/test_gate_signatures.py",
            "tests/test_sign_at_confirmation.py",
            "tests/test_sign_in_the_flow.py",
            "tests/announcing",
            *NOT_UNDER_MUTMUT,
            # the index's re-staging, a stopped publish's undo, a restart at every step
            "tests/storage/test_windows_index_gate.py",
            "tests/storage/test_crash_restart.py",
            "tests/storage/test_stops.py",
            "tests/test_wait.py",
            "tests/test_wait_rules.py",
            "tests/test_gate_registry.py",
            "tests/test_windows_index_registry.py",
            "tests/test_release_cycle_pinned.py",
            "tests/test_replies_lead_somewhere.py",
            "tests/test_mentions.py",
            "tests/test_console_output.py",
            "tests/test_state_growth.py",
            # the handlers' and the steps' own rules
            "tests/test_handler_sentences.py",
            "tests/test_publishing_handler_rules.py",
            "tests/storage/test_finishing_rules.py",
            "tests/test_pipeline_step_rules.py",
            "tests/test_runner_rules.py",
            "tests/test_ready_rules.py",
            "tests/test_status_rules.py",
            "tests/test_freeze_step_rules.py",
            "tests/test_runner_more_rules.py",
            "tests/test_state_disk_full.py",  # the journal cannot be written mid-publish
        ],
    ),
    "signing": Suite(
        "what counts as a valid signature, and the signatures the bot makes",
        ["bot/signing/verifier.py", "bot/signing/signer.py"],
        [
            "tests/signatures",
            "tests/test_gate_signatures.py",
            "tests/test_sign.py",
            "tests/test_sign_at_confirmation.py",
            "tests/test_sign_login_issuer.py",
            "tests/test_sign_in_the_flow.py",
            "tests/test_sign_pin.py",
            "tests/test_sign_rehearsal.py",
            "tests/test_signer_rules.py",
            "tests/storage/test_sign_over_sftp.py",
        ],
    ),
    "service": Suite(
        "the gate (one reply per line), what may run while a release is published, and the "
        "signing offer and its login check at the confirmation",
        [
            "bot/service/gate.py",
            "bot/service/while_publishing.py",
            "bot/service/signing_offer.py",
        ],
        [
            *GATE,
            "tests/test_gate_signatures.py",
            "tests/test_sign_at_confirmation.py",
            "tests/test_sign_login_issuer.py",
            "tests/test_publishing_handler_rules.py",
            "tests/test_handler_sentences.py",
            "tests/test_replies_lead_somewhere.py",
            "tests/test_console_output.py",
            "tests/test_metrics.py",
            "tests/test_pipeline_steps.py",
            "tests/storage/test_finishing_rules.py",
            "tests/storage/test_crash_restart.py",
            "tests/announcing/test_announce_handler_rules.py",
            # The gate's reads for the board, relbot wait and /status, and its scan's failures.
            "tests/test_board.py",
            "tests/test_board_day.py",
            "tests/test_wait_rules.py",
            "tests/test_wait_several.py",
            "tests/test_status_rules.py",
            "tests/test_day_at_a_glance.py",
            "tests/test_hostile_staging.py",
            "tests/test_first_scan.py",
            "tests/storage/test_one_scan.py",
        ],
    ),
    "lease": Suite(
        "the storage lock as the bot holds it: who holds it, when it is stale, the heartbeat",
        ["bot/ports/lease.py"],
        [
            "tests/storage/test_storage_lock.py",
            "tests/storage/test_lock_rules.py",
            "tests/storage/test_work_area.py",
            "tests/test_cli.py",
        ],
    ),
    # tests/test_wait_rehearsal.py runs `relbot wait` as a subprocess of the installed relbot,
    # which never imports mutmut's copy: it could kill no mutant, so it is not listed.
    "wait": Suite(
        "relbot wait: when a release has reached the state asked, and when to give up",
        ["bot/wait/*"],
        ["tests/test_wait.py", "tests/test_wait_rules.py", "tests/test_wait_on_the_board.py"],
    ),
    "config": Suite(
        "the configuration: every key checked, one sentence naming the key",
        ["bot/config/*"],
        [
            "tests/test_config.py",
            "tests/test_misconfiguration.py",
            "tests/test_work_config.py",
            "tests/test_release_cycle.py",
            "tests/test_release_cycle_pinned.py",
            "tests/test_check_report.py",
            "tests/announcing/test_announcing_config.py",
            "tests/signatures/test_trust_config.py",
        ],
    ),
    "pydotorg": Suite(
        "after the files: python.org's release page, the forum's topic, the public site's check",
        [
            "bot/pydotorg/release_page.py",
            "bot/pydotorg/discourse.py",
            "bot/pydotorg/downloads.py",
        ],
        ["tests/registry", "tests/announcing", *NOT_UNDER_MUTMUT],
    ),
}


def prepare(name: str, suite: Suite) -> Path:
    """The suite's folder: links to the project and the project's pyproject.toml with the
    suite's modules and tests added to its ``[tool.mutmut]`` table."""
    folder = RUNS / name
    folder.mkdir(parents=True, exist_ok=True)
    for entry in LINKED:
        link = folder / entry
        if not link.is_symlink():
            link.symlink_to(ROOT / entry)
    header = "[tool.mutmut]\n"
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    if header not in text:
        raise SystemExit("pyproject.toml has no [tool.mutmut] table")
    keys = f"only_mutate = {suite.mutate!r}\npytest_add_cli_args_test_selection = {suite.tests!r}\n"
    config = text.replace(header, header + keys.replace("'", '"'), 1)
    target = folder / "pyproject.toml"
    if not target.exists() or target.read_text(encoding="utf-8") != config:
        target.write_text(config, encoding="utf-8")
    return folder


def keep_verdicts(folder: Path) -> None:
    """Make mutmut take the suite's present list of tests for the one its verdicts were
    reached with (only sound when tests were added, none removed)."""
    stats = folder / "mutants" / "mutmut-stats.json"
    if not stats.exists():
        return
    current = subprocess.run(
        [sys.executable, "-c", FINGERPRINT], cwd=folder, capture_output=True, text=True, check=True
    )
    data = json.loads(stats.read_text(encoding="utf-8"))
    data["config_fingerprint"] = json.loads(current.stdout)
    stats.write_text(json.dumps(data), encoding="utf-8")


FINGERPRINT = (
    "import json; from mutmut.configuration import config; "
    "print(json.dumps(config().config_fingerprint()))"
)


def run(folder: Path, jobs: list[str], tests_added: bool) -> None:
    """mutmut over the suite (it draws a spinner; its verdicts are read afterwards)."""
    if tests_added:
        keep_verdicts(folder)
    subprocess.run([str(MUTMUT), "run", *jobs], cwd=folder, stdout=subprocess.DEVNULL, check=False)
    if tests_added:
        known = equivalents()
        alive = [
            m
            for m, status in verdicts(folder).items()
            if status in ("survived", "no tests")
            and (function_of(m), *changed_lines(mutmut(folder, "show", m))) not in known
        ]
        if alive:  # named, mutmut runs them again (a listed equivalent cannot be killed)
            subprocess.run(
                [str(MUTMUT), "run", *jobs, *alive],
                cwd=folder,
                stdout=subprocess.DEVNULL,
                check=False,
            )


def mutmut(folder: Path, *args: str) -> str:
    done = subprocess.run(
        [str(MUTMUT), *args], cwd=folder, capture_output=True, text=True, check=False
    )
    return done.stdout


def verdicts(folder: Path) -> dict[str, str]:
    found = {}
    for line in mutmut(folder, "results", "--all", "true").splitlines():
        match = LINE.match(line)
        if match:
            found[match["name"]] = match["status"].strip()
    return found


def function_of(mutant: str) -> str:
    return mutant.rsplit("__mutmut_", 1)[0]


def changed_lines(diff: str) -> tuple[str, str]:
    """The lines a mutant removes and the ones it adds, stripped; a line the diff shows on both
    sides (a closing bracket moved by a deleted argument) is no change."""
    lines = diff.splitlines()
    old = [x[1:].strip() for x in lines if x.startswith("-") and not x.startswith("---")]
    new = [x[1:].strip() for x in lines if x.startswith("+") and not x.startswith("+++")]
    return " ".join(x for x in old if x not in new), " ".join(x for x in new if x not in old)


def equivalents() -> dict[tuple[str, str, str], str]:
    listed = tomllib.loads(EQUIVALENTS.read_text(encoding="utf-8")).get("equivalent", [])
    return {(e["function"], e["old"].strip(), e["new"].strip()): e["why"] for e in listed}


def report(name: str, folder: Path, diffs: bool) -> collections.Counter[str]:
    found = verdicts(folder)
    if not found:
        print(f"{name}: no results (run the suite first)")
        return collections.Counter()
    known = equivalents()
    table: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    alive: list[tuple[str, str, str]] = []
    for mutant, status in sorted(found.items()):
        module = mutant.split(".x")[0]  # bot.domain.waivers.x_owner_of__mutmut_1
        # mypy --strict runs in `make test`; a mutant whose tests ran past mutmut's time limit
        # (a retried step that never succeeds, or a machine busy with the other children)
        # did not pass them either.
        if status in ("killed", "caught by type check", "timeout"):
            table[module]["killed"] += 1
            continue
        diff = mutmut(folder, "show", mutant)
        if (function_of(mutant), *changed_lines(diff)) in known:
            table[module]["equivalent"] += 1
            continue
        table[module][status] += 1
        alive.append((mutant, status, diff))
    print(f"\n{name}: {SUITES[name].what}")
    print(f"{'module':<34} {'mutants':>7} {'killed':>7} {'equiv.':>6} {'alive':>6} {'score':>6}")
    total: collections.Counter[str] = collections.Counter()
    for module in sorted(table):
        total += table[module]
        print(row(module, table[module]))
    print(row("all", total))
    for mutant, status, diff in alive:
        print(f"  alive: {mutant} ({status})")
        if diffs:
            print("    " + diff.strip().replace("\n", "\n    "))
    return total


def row(label: str, counts: collections.Counter[str]) -> str:
    n = sum(counts.values())
    killed, equivalent = counts["killed"], counts["equivalent"]
    alive = n - killed - equivalent
    score = f"{100 * killed / (n - equivalent):.1f}%" if n > equivalent else "-"
    return f"{label:<34} {n:>7} {killed:>7} {equivalent:>6} {alive:>6} {score:>6}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suites", nargs="*", help=f"among {', '.join(SUITES)} (default: all)")
    parser.add_argument("--no-run", action="store_true", help="only summarize the last run")
    parser.add_argument("--diffs", action="store_true", help="show each live mutant's diff")
    parser.add_argument("--list", action="store_true", help="the suites, and stop")
    parser.add_argument("--jobs", type=int, default=0, help="mutmut's children (default: cores)")
    parser.add_argument(
        "--tests-added", action="store_true", help="keep the verdicts: tests were only added"
    )
    args = parser.parse_args()
    unknown = [s for s in args.suites if s not in SUITES]
    if unknown:
        parser.error(f"no suite {', '.join(unknown)}; the suites are {', '.join(SUITES)}")
    if args.list:
        for name, suite in SUITES.items():
            print(f"{name}: {suite.what}\n  mutates {' '.join(suite.mutate)}")
            print(f"  tests   {' '.join(suite.tests)}")
        return 0
    total: collections.Counter[str] = collections.Counter()
    for name in args.suites or list(SUITES):
        folder = prepare(name, SUITES[name])
        if not args.no_run:
            started, root_before = time.monotonic(), set(os.listdir("/"))
            jobs = ["--max-children", str(args.jobs)] if args.jobs else []
            run(folder, jobs, args.tests_added)
            print(f"{name}: mutmut ran {time.monotonic() - started:.0f} s")
            if strays := sorted(set(os.listdir("/")) - root_before):
                # A mutant of a shell line (an empty temporary folder's variable, say) run as
                # root writes where the real line never does. Named, never removed here.
                print(f"{name}: new in / since the run began (check, then remove): ", end="")
                print(" ".join(f"/{n}" for n in strays))
        total += report(name, folder, args.diffs)
    if len(args.suites) != 1:
        print("\n" + row("every suite", total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
