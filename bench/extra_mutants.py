"""Mutants mutmut never makes, run against the same suites as bench/mutation_score.py.

mutmut 3.8.1 swaps operators (``and`` for ``or``), literals, names and arguments, and forces a
ternary's test (``(t) and False`` / ``(t) or True``), but it never drops one operand of an
``and``/``or``, never forces an ``if``/``elif``/``while`` or a comprehension's ``if`` to True or
False, and never replaces a statement with ``pass``: the very shapes of the gaps found by hand
(issue #46). Its operators are a fixed module-level list (``mutmut.mutation.mutators
.mutation_operators``), with no configuration key or entry point to add one. So this script
makes those three kinds itself, with libcst, for each module a suite mutates:

- ``drop-operand``: ``a and b and c`` becomes ``b and c``, ``a and c``, ``a and b`` (a chain of
  one operator is one expression; a parenthesized part is one operand);
- ``force-true`` / ``force-false``: the test of an ``if``, ``elif``, ``while`` or a
  comprehension's ``if`` becomes ``True`` / ``False`` (not ``if TYPE_CHECKING`` nor a test
  that is already a literal; ternaries are left to mutmut, which forces them already);
- ``pass``: a simple statement inside a function becomes ``pass`` (not a docstring or another
  bare string, ``...``, ``pass`` itself, nor a function's last statement when it is ``return``
  or ``return None``: each is already nothing; nor an ``assert``, which states what holds for
  mypy and the reader: without it the code runs the same unless the assert could fail).

Lines that match ``[tool.mutmut] do_not_mutate_patterns`` in pyproject.toml (log lines: what
they say is not behaviour) are left alone, as mutmut leaves them.

How a mutant is run. The tree is never edited in place: each worker (``--jobs N``) has a
scratch copy, ``.mutation/extra/SUITE/wN/``, with its own bot/, adapters/ and tests/ (copied
afresh at each run), pyproject.toml, and links to the rest (w1… are copies of w0 made after the
clean run, so that its bytecode is theirs too). pytest runs there with the copy
first on PYTHONPATH, so the copy's ``bot`` is the one imported, by pytest and by every
subprocess a test starts (``relbot manifest`` in tests/test_manifest_kinds.py, ``relbot``
commands in tests/test_typed_text.py: the installed relbot script runs the copy's ``bot``,
since PYTHONPATH comes before the editable install's finder); the script checks that before
it starts. A mutant is written over the copy's module, with an mtime of its own so that no
stale bytecode is run (no bytecode is written while mutants run), run, and the original put back.

Which tests. One clean run of the suite's tests under coverage.py (bench/mutant_contexts.py)
records the tests that run each line, in pytest's process and in the Python subprocesses the
tests start; a mutant runs, with ``pytest -x``, the tests that ran any line of the node it
changes, quickest first. A line only run while modules were imported (no test running) takes
the whole suite; a line no test runs is alive without a run ("no tests"). ``--confirm`` runs
each survivor once more against the whole suite, for a test whose process coverage cannot
follow. A run longer than its deadline (a forced ``while True``) is a timeout, counted as
killed, as bench/mutation_score.py counts mutmut's.

Equivalents are listed in ``bench/equivalent_extra_mutants.toml``, each with its reason,
matched by function, kind and the changed line before and after (stripped), not by line
number; the score leaves them out.

    python bench/extra_mutants.py rules --jobs 2      # mutants of a suite, then the summary
    python bench/extra_mutants.py --no-run rules      # the summary of the last run
    python bench/extra_mutants.py --again rules       # only the last run's survivors again
    python bench/extra_mutants.py --only plan.py:57 rules  # mutants whose id contains this
    python bench/extra_mutants.py --again --confirm rules  # survivors, then the whole suite
    python bench/extra_mutants.py --list              # the suites (bench/mutation_score.py's)
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import dataclasses
import difflib
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import Iterable, Sequence
from pathlib import Path

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.mutation_score import SUITES, Suite, changed_lines, row

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / ".mutation" / "extra"
EQUIVALENTS = ROOT / "bench" / "equivalent_extra_mutants.toml"
PLUGIN_DIR = Path(__file__).resolve().parent  # bench/mutant_contexts.py, for the clean run
COPIED = ("bot", "adapters", "tests", "pyproject.toml")  # what a mutant may change or read
NOT_LINKED = {"test-artifacts", "relbot-data", "build"}  # what the tests write under the root
PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
KINDS = ("drop-operand", "force-true", "force-false", "pass")
FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.MULTILINE)


@dataclasses.dataclass(frozen=True)
class Mutant:
    ident: str  # bot/domain/plan.py:57:force-false (#2 when a line has two of a kind)
    path: str  # bot/domain/plan.py
    line: int  # where the changed node starts
    last: int  # where it ends
    kind: str
    function: str  # bot.domain.plan.make_plan; bot.domain.plan.PublishPlan.digest
    old: str  # the changed lines, stripped and joined
    new: str
    code: str  # the whole module, mutated

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.function, self.kind, self.old, self.new)


@dataclasses.dataclass
class Verdict:
    ident: str
    path: str
    line: int
    kind: str
    function: str
    old: str
    new: str
    status: str  # killed, timeout, alive, no tests (no test runs the line)
    tests: int  # how many tests ran it (0: the whole suite)
    seconds: float
    killer: str = ""  # the first test that failed


# -- the mutants --------------------------------------------------------------------------


def _is_literal_bool(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value in ("True", "False")


def _always_equivalent(test: cst.BaseExpression) -> bool:
    """``if TYPE_CHECKING:`` (annotations are strings here, so neither way changes a run)."""
    return isinstance(test, cst.Name) and test.value == "TYPE_CHECKING"


def _returns_none(statement: cst.BaseSmallStatement) -> bool:
    if not isinstance(statement, cst.Return):
        return False
    return statement.value is None or (
        isinstance(statement.value, cst.Name) and statement.value.value == "None"
    )


def _nothing(statement: cst.BaseSmallStatement) -> bool:
    """A statement whose replacement by ``pass`` is itself: pass, a bare string, ``...``; or
    an assert (of what holds: dropped, the code runs the same)."""
    if isinstance(statement, cst.Pass | cst.Assert):
        return True
    return isinstance(statement, cst.Expr) and isinstance(
        statement.value, cst.SimpleString | cst.ConcatenatedString | cst.Ellipsis
    )


class _Sites(cst.CSTVisitor):
    """Every node a mutant changes, with its replacements, its function and its lines."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, module: str, skipped_lines: set[int]) -> None:
        super().__init__()
        self.module = module
        self.skipped = skipped_lines
        self.scope: list[str] = []
        self.functions = 0
        self.inner: set[int] = set()  # ids of BooleanOperations inside a chain already taken
        self.last: set[int] = set()  # ids of a function's last `return None`, as good as pass
        self.sites: list[tuple[str, str, CodeRange, cst.CSTNode, cst.CSTNode]] = []

    def _add(self, kind: str, old: cst.CSTNode, new: cst.CSTNode) -> None:
        where = self.get_metadata(PositionProvider, old)
        if where.start.line in self.skipped:
            return
        function = ".".join([self.module, *self.scope]) if self.scope else self.module
        self.sites.append((kind, function, where, old, new))

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.scope.append(node.name.value)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.scope.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.scope.append(node.name.value)
        self.functions += 1
        # An indented body holds statement lines; a one-line `def f(): ...` small statements.
        last: cst.CSTNode | None = node.body.body[-1] if node.body.body else None
        if isinstance(last, cst.SimpleStatementLine):
            last = last.body[-1]
        if isinstance(last, cst.BaseSmallStatement) and _returns_none(last):
            self.last.add(id(last))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.scope.pop()
        self.functions -= 1

    # force-true / force-false
    def _force(self, test: cst.BaseExpression) -> None:
        if _is_literal_bool(test) or _always_equivalent(test):
            return
        for value in ("True", "False"):
            forced = cst.Name(value, lpar=test.lpar, rpar=test.rpar)
            self._add(f"force-{value.lower()}", test, forced)

    def visit_If(self, node: cst.If) -> None:
        self._force(node.test)

    def visit_While(self, node: cst.While) -> None:
        self._force(node.test)

    def visit_CompIf(self, node: cst.CompIf) -> None:
        self._force(node.test)

    # drop-operand
    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        if id(node) in self.inner:
            return
        operands: list[cst.BaseExpression] = []
        operators: list[cst.BaseBooleanOp] = []
        self._flatten(node, type(node.operator), operands, operators, top=True)
        for drop in range(len(operands)):
            kept = operands[:drop] + operands[drop + 1 :]
            ops = operators[: drop - 1] + operators[drop:] if drop else operators[1:]
            self._add("drop-operand", node, _chain(kept, ops, node))

    def _flatten(
        self,
        node: cst.BaseExpression,
        operator: type[cst.BaseBooleanOp],
        operands: list[cst.BaseExpression],
        operators: list[cst.BaseBooleanOp],
        top: bool = False,
    ) -> None:
        """The operands of a chain of one operator: ``a and b and c`` is nested
        ``(a and b) and c``; a part in parentheses of its own is one operand."""
        if (
            isinstance(node, cst.BooleanOperation)
            and isinstance(node.operator, operator)
            and (top or not node.lpar)
        ):
            if not top:
                self.inner.add(id(node))
            self._flatten(node.left, operator, operands, operators)
            operators.append(node.operator)
            self._flatten(node.right, operator, operands, operators)
        else:
            operands.append(node)

    # pass
    def _statements(self, body: Sequence[cst.BaseSmallStatement]) -> None:
        if not self.functions:
            return
        for statement in body:
            if not _nothing(statement) and id(statement) not in self.last:
                self._add("pass", statement, cst.Pass(semicolon=statement.semicolon))

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._statements(node.body)

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> None:
        self._statements(node.body)


def _chain(
    operands: list[cst.BaseExpression],
    operators: list[cst.BaseBooleanOp],
    whole: cst.BooleanOperation,
) -> cst.BaseExpression:
    """The operands left, joined by the operators left, in the whole's parentheses."""
    built = operands[0]
    for operator, operand in zip(operators, operands[1:], strict=True):
        built = cst.BooleanOperation(left=built, operator=operator, right=operand)
    return built.with_changes(lpar=[*whole.lpar, *built.lpar], rpar=[*built.rpar, *whole.rpar])


def skipped_lines(source: str) -> set[int]:
    """The lines [tool.mutmut] do_not_mutate_patterns leaves alone (log lines)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = [re.compile(p) for p in config["tool"]["mutmut"]["do_not_mutate_patterns"]]
    return {
        n
        for n, text in enumerate(source.splitlines(), start=1)
        if any(p.search(text) for p in patterns)
    }


def mutants_of(path: str) -> list[Mutant]:
    source = (ROOT / path).read_text(encoding="utf-8")
    module = path.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
    wrapper = MetadataWrapper(cst.parse_module(source))
    sites = _Sites(module, skipped_lines(source))
    wrapper.visit(sites)
    found: list[Mutant] = []
    seen: collections.Counter[str] = collections.Counter()
    for kind, function, where, old, new in sites.sites:
        mutated = wrapper.module.deep_replace(old, new)
        assert isinstance(mutated, cst.Module)
        code = mutated.code
        if code == source:
            continue
        diff = "\n".join(
            difflib.unified_diff(source.splitlines(), code.splitlines(), lineterm="", n=0)
        )
        before, after = changed_lines(diff)
        ident = f"{path}:{where.start.line}:{kind}"
        seen[ident] += 1
        if seen[ident] > 1:
            ident += f"#{seen[ident]}"
        found.append(
            Mutant(
                ident, path, where.start.line, where.end.line, kind, function, before, after, code
            )
        )
    return found


def modules_of(suite: Suite) -> list[str]:
    """The suite's modules, its globs (``bot/wait/*``) expanded to their .py files."""
    found: list[str] = []
    for pattern in suite.mutate:
        for path in sorted(ROOT.glob(pattern)):
            if path.suffix == ".py" and path.is_file():
                found.append(str(path.relative_to(ROOT)))
    return found


# -- the scratch copies -------------------------------------------------------------------


def scratch(folder: Path) -> Path:
    """A fresh copy of what a mutant changes or the tests import, and links to the rest."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in COPIED:
        target = folder / name
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.exists() or target.is_symlink():
            target.unlink()
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, target)
    for entry in ROOT.iterdir():
        name = entry.name
        if name.startswith(".") or name in COPIED or name in NOT_LINKED:
            continue
        if name.endswith(".egg-info"):
            continue
        link = folder / name
        if not link.is_symlink():
            link.symlink_to(entry)
    return folder


def copy_of(first: Path, folder: Path) -> Path:
    """Another worker's copy: the first one after its clean run, bytecode and links as they
    are (the copy keeps the files' times, so the bytecode stays valid)."""
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(first, folder, symlinks=True, ignore=shutil.ignore_patterns("coverage"))
    return folder


def environment(folder: Path, bytecode: bool = False) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(folder), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    # The clean run writes the bytecode of the copy and of what it imports (uv installs
    # without it), which spares each mutant's run compiling them again; a mutant's own would
    # outlive it, so none is written while mutants run.
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.pop("COVERAGE_PROCESS_START", None)
    return env


def check_imports(folder: Path) -> None:
    """The copy's bot is the one imported: by pytest, run in the copy, and by a subprocess a
    test starts in a folder of its own (an installed script finds it the same way)."""
    probe = "import bot, adapters, tests; print(bot.__file__, adapters.__file__, tests.__file__)"
    with tempfile.TemporaryDirectory(prefix="extra-mutants-") as elsewhere:
        for cwd in (folder, Path(elsewhere)):
            done = subprocess.run(
                [sys.executable, "-c", probe],
                cwd=cwd,
                env=environment(folder),
                capture_output=True,
                text=True,
                check=False,
            )
            files = done.stdout.split()
            if done.returncode or not all(Path(f).is_relative_to(folder) for f in files):
                raise SystemExit(f"not the scratch copy's bot: {done.stdout}{done.stderr}")


# -- which tests --------------------------------------------------------------------------


@dataclasses.dataclass
class Coverage:
    contexts: dict[tuple[str, int], set[str]]  # (module path, line): node ids
    durations: dict[str, float]
    seconds: float  # the clean run

    def tests_for(self, mutant: Mutant) -> list[str] | None:
        """The tests that run the mutant's lines, quickest first; None: the whole suite
        (its lines ran only while modules were imported); []: none."""
        found: set[str] = set()
        for line in range(mutant.line, mutant.last + 1):
            found |= self.contexts.get((mutant.path, line), set())
        if found == {""}:
            return None
        found.discard("")
        return sorted(found, key=lambda t: (self.durations.get(t, 0.0), t))


def clean_run(suite: Suite, folder: Path, modules: list[str]) -> Coverage:
    """The suite's tests once, unmutated, under coverage: which test runs which line. In one
    process (see bench/mutant_contexts.py), and writing the bytecode the mutants' runs use."""
    from coverage import CoverageData  # the mutation extra's, as mutmut's is

    data_dir = folder / "coverage"
    shutil.rmtree(data_dir, ignore_errors=True)
    data_dir.mkdir()
    data_dir.chmod(0o1777)  # tests run relbot as another user too (nobody): its data counts
    env = environment(folder, bytecode=True)
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(PLUGIN_DIR)])
    env["EXTRA_MUTANTS_DATA"] = str(data_dir / "contexts")
    env["EXTRA_MUTANTS_INCLUDE"] = os.pathsep.join(str(folder / m) for m in modules)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="extra-mutants-") as temp:
        done = subprocess.run(
            [*PYTEST, "-p", "mutant_contexts", "--basetemp", temp, *suite.tests],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    seconds = time.monotonic() - started
    if done.returncode:
        print(done.stdout[-4000:], done.stderr[-2000:], sep="\n")
        raise SystemExit("the suite's tests fail on the unmutated code: fix that first")
    contexts: dict[tuple[str, int], set[str]] = collections.defaultdict(set)
    for data_file in data_dir.glob("contexts.*"):
        data = CoverageData(basename=str(data_file))
        data.read()
        for module in modules:
            by_line = data.contexts_by_lineno(str(folder / module))
            for line, names in by_line.items():
                contexts[(module, line)].update(names)
    durations = json.loads((data_dir / "durations.json").read_text(encoding="utf-8"))
    return Coverage(dict(contexts), durations, seconds)


# -- running ------------------------------------------------------------------------------


def pytest_once(
    folder: Path, tests: Sequence[str], deadline: float, basetemp: Path
) -> tuple[str, str]:
    """(killed | alive | timeout | error, the first failing test)."""
    command = [*PYTEST, "-x", "--basetemp", str(basetemp), "-o", f"timeout={int(deadline)}"]
    process = subprocess.Popen(
        [*command, *tests],
        cwd=folder,
        env=environment(folder),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own group: a timeout ends the tests' subprocesses too
    )
    try:
        out, _ = process.communicate(timeout=deadline)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return "timeout", ""
    if process.returncode == 0:
        return "alive", ""
    if process.returncode in (1, 2):  # a test failed, or the mutant broke the import
        found = FAILED.search(out)
        return "killed", found.group(1) if found else "(collection)"
    return "error", out[-300:]


def run_mutant(
    mutant: Mutant, folder: Path, suite: Suite, cov: Coverage, temp: Path, confirm: bool
) -> Verdict:
    target = folder / mutant.path
    original = target.read_text(encoding="utf-8")
    stat = target.stat()
    selected = cov.tests_for(mutant)
    started = time.monotonic()
    status, killer = ("no tests", "") if selected == [] else ("error", "")
    try:
        target.write_text(mutant.code, encoding="utf-8")
        # Not the original's time: its bytecode would be taken for the mutant's.
        os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns + 7_000_000_000))
        if selected:
            spent = sum(cov.durations.get(t, 1.0) for t in selected)
            status, killer = pytest_once(folder, selected, 60 + 3 * spent, temp)
        if selected is None or status == "error" or (confirm and status in ("alive", "no tests")):
            status, killer = pytest_once(folder, suite.tests, 60 + 3 * cov.seconds, temp)
            selected = []
    finally:
        target.write_text(original, encoding="utf-8")
        os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    return Verdict(
        mutant.ident,
        mutant.path,
        mutant.line,
        mutant.kind,
        mutant.function,
        mutant.old,
        mutant.new,
        status,
        len(selected or []),
        time.monotonic() - started,
        killer,
    )


def run_suite(
    name: str, mutants: list[Mutant], jobs: int, confirm: bool, current: set[str]
) -> list[Verdict]:
    suite = SUITES[name]
    first = scratch(RUNS / name / "w0")
    check_imports(first)
    cov = clean_run(suite, first, sorted({m.path for m in mutants}))
    folders = [first, *(copy_of(first, RUNS / name / f"w{n}") for n in range(1, jobs))]
    print(f"{name}: clean run with coverage {cov.seconds:.0f} s; {len(mutants)} mutants")
    free: queue.Queue[Path] = queue.Queue()
    for folder in folders:
        free.put(folder)
    lock = threading.Lock()
    verdicts: list[Verdict] = []

    def one(mutant: Mutant) -> Verdict:
        folder = free.get()
        try:
            with tempfile.TemporaryDirectory(prefix="extra-mutants-") as temp:
                verdict = run_mutant(mutant, folder, suite, cov, Path(temp), confirm)
        finally:
            free.put(folder)
        with lock:
            verdicts.append(verdict)
            if verdict.status not in ("killed",):
                print(f"  {verdict.status}: {mutant.ident}  {mutant.old} -> {mutant.new}")
            if len(verdicts) % 25 == 0:  # kept as they come: a run stopped early still counts
                print(f"  {len(verdicts)} of {len(mutants)} done")
                save(name, verdicts, current)
        return verdict

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, mutants))
    return sorted(verdicts, key=lambda v: (v.path, v.line, v.ident))


# -- the summary ----------------------------------------------------------------------------


def equivalents() -> dict[tuple[str, str, str, str], str]:
    if not EQUIVALENTS.exists():
        return {}
    listed = tomllib.loads(EQUIVALENTS.read_text(encoding="utf-8")).get("equivalent", [])
    return {
        (e["function"], e["kind"], e["old"].strip(), e["new"].strip()): e["why"] for e in listed
    }


def report(name: str, verdicts: Iterable[Verdict], minutes: float | None) -> None:
    known = equivalents()
    table: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    kinds: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    alive: list[Verdict] = []
    timeouts = 0
    for v in verdicts:
        if v.status in ("killed", "timeout"):
            verdict = "killed"
            timeouts += v.status == "timeout"
        elif (v.function, v.kind, v.old, v.new) in known:
            verdict = "equivalent"
        else:
            verdict = v.status
            alive.append(v)
        table[v.path][verdict] += 1
        kinds[v.kind][verdict] += 1
    took = f", {minutes:.1f} min" if minutes is not None else ""
    print(f"\n{name}: {SUITES[name].what} (extra mutants{took}; {timeouts} timeouts, as killed)")
    print(f"{'module':<34} {'mutants':>7} {'killed':>7} {'equiv.':>6} {'alive':>6} {'score':>6}")
    total: collections.Counter[str] = collections.Counter()
    for module in sorted(table):
        total += table[module]
        print(row(module, table[module]))
    print(row("all", total))
    for kind in KINDS:
        if kind in kinds:
            print(row(f"  {kind}", kinds[kind]))
    for v in alive:
        print(f"  {v.status}: {v.path}:{v.line} {v.kind} ({v.function})")
        print(f"    - {v.old}\n    + {v.new or '(nothing)'}")


def results_file(name: str) -> Path:
    return RUNS / name / "results.json"


def load(name: str) -> list[Verdict]:
    path = results_file(name)
    if not path.exists():
        return []
    return [Verdict(**v) for v in json.loads(path.read_text(encoding="utf-8"))]


def save(name: str, verdicts: list[Verdict], current: set[str]) -> None:
    """The run's verdicts, merged into the last ones (a partial run replaces only its own);
    a mutant the code no longer has (``current``: the ids made now) is dropped."""
    merged = {v.ident: v for v in load(name) if v.ident in current}
    merged.update({v.ident: v for v in verdicts})
    path = results_file(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [dataclasses.asdict(v) for v in sorted(merged.values(), key=lambda v: v.ident)]
    path.write_text(json.dumps(rows, indent=1, ensure_ascii=False), encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suites", nargs="*", help=f"among {', '.join(SUITES)} (default: all)")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once (default: 1)")
    parser.add_argument("--no-run", action="store_true", help="only summarize the last run")
    parser.add_argument("--again", action="store_true", help="only the last run's survivors")
    parser.add_argument("--only", action="append", default=[], help="ids containing this")
    parser.add_argument(
        "--confirm", action="store_true", help="run each survivor against the whole suite"
    )
    parser.add_argument("--list", action="store_true", help="the suites, and stop")
    args = parser.parse_args()
    unknown = [s for s in args.suites if s not in SUITES]
    if unknown:
        parser.error(f"no suite {', '.join(unknown)}; the suites are {', '.join(SUITES)}")
    if args.list:
        for name, suite in SUITES.items():
            print(f"{name}: {suite.what}\n  mutates {' '.join(modules_of(suite))}")
            print(f"  tests   {' '.join(suite.tests)}")
        return 0
    for name in args.suites or list(SUITES):
        if args.no_run:
            report(name, load(name), None)
            continue
        mutants = [m for path in modules_of(SUITES[name]) for m in mutants_of(path)]
        current = {m.ident for m in mutants}
        if args.again:
            known = equivalents()
            last = {
                (v.function, v.kind, v.old, v.new)
                for v in load(name)
                if v.status not in ("killed", "timeout")
            }
            mutants = [m for m in mutants if m.key in last and m.key not in known]
        if args.only:
            mutants = [m for m in mutants if any(o in m.ident for o in args.only)]
        if not mutants:
            print(f"{name}: no mutants to run")
            continue
        started = time.monotonic()
        verdicts = run_suite(name, mutants, max(1, args.jobs), args.confirm, current)
        minutes = (time.monotonic() - started) / 60
        save(name, verdicts, current)
        print(f"{name}: {len(verdicts)} mutants ran in {minutes:.1f} min (--jobs {args.jobs})")
        report(name, load(name), minutes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
