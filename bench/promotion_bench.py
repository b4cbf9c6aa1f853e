"""Storage benchmark: local folders vs SFTP to a loopback OpenSSH server it starts itself.

    .venv/bin/python bench/promotion_bench.py [--runs 5] [--hash-mb 200] [--real-size-gb 1.5]
    .venv/bin/python bench/promotion_bench.py --copy-only [--copy-mb 64]

Measures, for a realistic 60-file CPython release (names shaped like
``tests/data/cpython-3.14.0-ftp-listing.txt``, small files):
- confirm → verified public as storage sees it: the freeze (the bot's own copy of every
  file in its work folder, hashed as it is made), the promotion from the work folder and the
  check of public against what the bot wrote (by identity; hashing only where identity cannot
  tell); total time, and the first-to-last visibility window as seen by a SEPARATE observer
  process listing the public ``X.Y.Z/`` folder in a tight loop, when that folder is absent
  (one rename) and when it exists (the per-file batch); ``--real-size-gb`` adds one SFTP run
  of a release that big;
- a steady-state scan of 6 open releases: time and round trips;
- hashing a large file on the server (``sha256sum`` over exec) vs by download (SFTP only);
- the bot's copy of a large file on a server without exec (through this machine): time and
  the bot's peak memory (tracemalloc).
Prints tables; not a test. Everything lives in a temporary folder removed at the end.
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.profile import load_profile
from bot.domain.tags import ReleaseTag
from bot.ports import Storage
from bot.storage.local import LocalStorage
from bot.storage.primitives import CopyJob
from tests.sshd import SshServer
from tests.storage.conftest import sftp_storage

PROFILE = load_profile("cpython")
OBSERVE_SECONDS = 120
STAGES = ("freeze", "promote")  # promote includes the check of what became public


def release_files(tag: str) -> list[str]:
    """The 3.14.0b3 download listing's shapes for ``tag``, plus MSI files: 60 files."""
    t = ReleaseTag.parse(tag)
    pre = t.prerelease_suffix
    names = [f"Python-{tag}{ext}" for ext in (".tgz", ".tar.xz")]
    names = [n + s for n in names for s in ("", ".crt", ".sig", ".sigstore", ".spdx.json")]
    for arch in ("", "-amd64", "-arm64"):
        names += [f"python-{tag}{arch}.exe{s}" for s in ("", ".crt", ".sig", ".sigstore")]
    for arch in ("win32", "amd64", "arm64"):
        names += [f"python-{tag}-embed-{arch}.zip{s}" for s in ("", ".crt", ".sig", ".sigstore")]
        names += [f"python-{tag}{kind}-{arch}.zip" for kind in ("", "t", "-embeddable", "-test")]
    names += [f"python-{tag}-macos11.pkg{s}" for s in ("", ".crt", ".sig", ".sigstore")]
    names += [f"python-{tag}-{a}-linux-android.tar.gz" for a in ("aarch64", "x86_64")]
    names += [f"Python-{tag}-iOS-XCframework.tar.gz"]
    names += [f"amd64{pre}/{m}.msi" for m in ("core", "dev", "exe", "lib", "tcltk", "test")]
    names += [f"windows-{tag}.json"]
    return names[:60]


SIDECARS = (".crt", ".sig", ".sigstore", ".spdx.json")


def stage(staging: Path, tag: str, total_bytes: int = 0) -> list[str]:
    """The 60 files; small ones, or artifacts sharing ``total_bytes`` (sidecars stay small)."""
    names = release_files(tag)
    artifacts = [n for n in names if not n.endswith(SIDECARS)]
    block = os.urandom(1 << 20)
    for name in names:
        path = staging / tag / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if not total_bytes or name not in artifacts:
            path.write_bytes(f"{tag} {name}\n".encode() * 64)
            continue
        size = total_bytes // len(artifacts)
        with path.open("wb") as f:
            f.write(name.encode())  # every file distinct
            for _ in range(size // len(block)):
                f.write(block)
    return names


def plan_for(staging: Path, tag: str, names: list[str]) -> PublishPlan:
    """The plan the gate would build: the profile's targets, indexes last."""
    release = ReleaseTag.parse(tag)
    files = []
    for name in names:
        role = PROFILE.classify(release, name).role or "windows"
        data = (staging / tag / name).read_bytes()
        target = PROFILE.public_target(release, role, name)
        files.append(PlanFile(name, target, role, len(data), hashlib.sha256(data).hexdigest()))
    files.sort(key=lambda f: (PROFILE.is_index(f.path), f.path))
    return PublishPlan(release, tuple(files))


# -- the observer (a separate process) ------------------------------------------------------


def observe(folder: str, expected: int, ready: Any, out: Any) -> None:
    """List ``folder`` recursively in a tight loop; report when the first new file and the
    last expected one were seen, and how long one listing took."""

    def count() -> int:
        return sum(len(files) for _, _, files in os.walk(folder))

    already, loops = count(), 0
    ready.set()
    first = last = None
    start = time.perf_counter_ns()
    deadline = start + OBSERVE_SECONDS * 10**9
    while last is None and time.perf_counter_ns() < deadline:
        seen = count()
        now = time.perf_counter_ns()
        loops += 1
        if seen > already and first is None:
            first = now
        if seen >= already + expected:
            last = now
    out.put((first, last, (time.perf_counter_ns() - start) / max(loops, 1)))


def promote_observed(
    make: Callable[[], Storage], staging: Path, public: Path, existing: bool, total_bytes: int = 0
) -> dict[str, float]:
    """What a confirmation does to storage, timed: the freeze (the bot's copies, hashed as
    they are made), the promotion from the work folder with the check of what is public."""
    tag = "3.14.0"
    if existing:  # rc3 is public already: the folder exists, files go one by one
        for name in stage(staging, "3.14.0rc3"):
            target = public / "3.14.0" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            (staging / "3.14.0rc3" / name).rename(target)
    names = stage(staging, tag, total_bytes)
    plan = plan_for(staging, tag, names)
    storage = make()
    storage.check()  # connect (and probe) before the clock starts: a warm bot
    ctx = mp.get_context("spawn")
    ready, out = ctx.Event(), ctx.Queue()
    watcher = ctx.Process(target=observe, args=(str(public / "3.14.0"), len(names), ready, out))
    watcher.start()
    ready.wait(OBSERVE_SECONDS)
    requests = dict(getattr(storage, "requests", {}))
    t0 = time.perf_counter_ns()
    problems = storage.freeze(plan)
    t_frozen = time.perf_counter_ns()
    report = storage.promote(plan)
    t1 = time.perf_counter_ns()
    assert not problems and not report.problems, (problems, report.problems)
    first, last, loop = out.get(timeout=OBSERVE_SECONDS + 5)
    watcher.join()
    if first is None or last is None:
        raise RuntimeError("the observer did not see the whole release")
    after = dict(getattr(storage, "requests", {}))
    close = getattr(storage, "close", None)
    if close is not None:
        close()
    assert ("3.14.0" in report.renamed) == (not existing)
    return {
        "freeze": (t_frozen - t0) / 1e6,
        "promote": (t1 - t_frozen) / 1e6,
        "total": (t1 - t0) / 1e6,
        "window": (last - first) / 1e6,
        "loop": loop / 1e6,
        "trips": sum(after.values()) - sum(requests.values()),
    }


# -- scenarios ------------------------------------------------------------------------------


def bench_promotion(
    root: Path, server: SshServer, runs: int
) -> list[tuple[str, str, dict[str, float]]]:
    rows = []
    for backend in ("local", "sftp"):
        for existing in (False, True):
            results = []
            for i in range(runs):
                run = root / f"promote-{backend}-{existing}-{i}"
                staging, public = run / "staging", run / "public"
                staging.mkdir(parents=True)
                public.mkdir()

                def make(
                    staging: Path = staging, public: Path = public, backend: str = backend
                ) -> Storage:
                    if backend == "local":
                        return LocalStorage(staging, public)
                    return sftp_storage(server, staging, public)

                results.append(promote_observed(make, staging, public, existing))
            merged = {
                **{k: statistics.median(r[k] for r in results) for k in STAGES},
                "total": statistics.median(r["total"] for r in results),
                "window": statistics.median(r["window"] for r in results),
                "window_max": max(r["window"] for r in results),
                "loop": statistics.median(r["loop"] for r in results),
                "trips": statistics.median(r["trips"] for r in results),
            }
            rows.append((backend, "existing (batch)" if existing else "absent (rename)", merged))
    return rows


def bench_scan(root: Path, server: SshServer, runs: int) -> list[tuple[str, str, float, str]]:
    staging, public = root / "scan" / "staging", root / "scan" / "public"
    public.mkdir(parents=True)
    for tag in ("3.12.12", "3.13.10", "3.14.1", "3.14.2rc1", "3.15.0a3", "3.15.0a4"):
        stage(staging, tag)
    rows = []
    for backend in ("local", "sftp"):
        storage: Storage = (
            LocalStorage(staging, public)
            if backend == "local"
            else sftp_storage(server, staging, public)
        )

        def scan(storage: Storage = storage) -> None:
            for tag in storage.staged_tags():
                release = ReleaseTag.parse(tag)
                listing = storage.list_staging(release) or {}
                storage.digest(release, [p for p, f in listing.items() if f.regular])

        for label in ("first scan (hashes all)", "steady-state scan"):
            times, trips = [], ""
            for _ in range(1 if label.startswith("first") else runs):
                before = dict(getattr(storage, "requests", {}))
                t0 = time.perf_counter()
                scan()
                times.append((time.perf_counter() - t0) * 1000)
                after = dict(getattr(storage, "requests", {}))
                delta = {
                    k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)
                }
                trips = ", ".join(f"{k} {v}" for k, v in sorted(delta.items())) or "-"
            rows.append((backend, label, statistics.median(times), trips))
    return rows


def bench_hashing(
    root: Path, server: SshServer, sftp_only: SshServer, megabytes: int, runs: int
) -> list[tuple[str, float]]:
    staging, public = root / "hash" / "staging", root / "hash" / "public"
    (staging / "3.14.0").mkdir(parents=True)
    public.mkdir()
    big = staging / "3.14.0" / "python-3.14.0-macos11.pkg"
    with big.open("wb") as f:
        for _ in range(megabytes):
            f.write(os.urandom(1 << 20))
    tag = ReleaseTag.parse("3.14.0")
    rows = []
    for label, make in (
        ("local (hashlib on this machine)", lambda: LocalStorage(staging, public)),
        ("sftp, on the server (sha256sum)", lambda: sftp_storage(server, staging, public)),
        ("sftp, by download (no exec)", lambda: sftp_storage(sftp_only, staging, public)),
    ):
        times = []
        for _ in range(runs):
            storage = make()
            storage.staged_tags()  # connected: time the hashing only
            t0 = time.perf_counter()
            storage.digest(tag, [big.name])  # no listing first, so nothing is cached
            times.append((time.perf_counter() - t0) * 1000)
        rows.append((label, statistics.median(times)))
    return rows


def bench_copy_without_exec(
    root: Path, sftp_only: SshServer, megabytes: int, runs: int
) -> tuple[float, float]:
    """The bot's copy of one large file when the server allows no exec: the bytes come down
    and go back up. The median time in ms and the largest peak of traced memory in MiB."""
    staging, public = root / "stream" / "staging", root / "stream" / "public"
    staging.mkdir(parents=True)
    public.mkdir()
    big = staging / "python-3.14.0-amd64.exe"
    with big.open("wb") as f:
        for _ in range(megabytes):
            f.write(os.urandom(1 << 20))
    digest = hashlib.sha256(big.read_bytes()).hexdigest()
    times, peaks = [], []
    for n in range(runs):
        storage = sftp_storage(sftp_only, staging, public)
        job = CopyJob(str(big), str(root / "stream" / f"copy-{n}"), digest)
        storage.staged_tags()  # connected: time the copy only
        tracemalloc.start()
        t0 = time.perf_counter()
        copied = storage._ssh.call("bench", lambda conn, s=storage, j=job: s._fs(conn).copy([j]))
        times.append((time.perf_counter() - t0) * 1000)
        peaks.append(tracemalloc.get_traced_memory()[1] / 2**20)
        tracemalloc.stop()
        assert copied[0].problem == "", copied
    return statistics.median(times), max(peaks)


def bench_real_size(root: Path, server: SshServer, gigabytes: float) -> None:
    """Once: a release of real size (60 files, ``gigabytes`` in all) over SFTP."""
    run = root / "real-size"
    staging, public = run / "staging", run / "public"
    staging.mkdir(parents=True)
    public.mkdir()
    r = promote_observed(
        lambda: sftp_storage(server, staging, public),
        staging,
        public,
        False,
        int(gigabytes * 1e9),
    )
    print(f"\nConfirm → public over SFTP, 60 files, {gigabytes} GB in all (one run)")
    print(
        " ".join(f"{k} {r[k]:.0f} ms;" for k in (*STAGES, "total")), f"window {r['window']:.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--hash-mb", type=int, default=200)
    parser.add_argument("--copy-mb", type=int, default=64)
    parser.add_argument("--copy-only", action="store_true", help="only the copy without exec")
    parser.add_argument(
        "--real-size-gb", type=float, default=0, help="also one run of a release this big"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="relbot-bench-") as tmp:
        root = Path(tmp)
        server = SshServer.create(root / "sshd")
        sftp_only = SshServer.create(
            root / "sshd-sftp-only", extra_config="ForceCommand internal-sftp"
        )
        server.start()
        sftp_only.start()
        try:
            if args.copy_only:
                ms, peak = bench_copy_without_exec(root, sftp_only, args.copy_mb, args.runs)
                print(f"Copy of a {args.copy_mb} MB file without exec: {ms:.0f} ms, {peak:.1f} MiB")
                return
            promotion = bench_promotion(root, server, args.runs)
            scan = bench_scan(root, server, args.runs)
            hashing = bench_hashing(root, server, sftp_only, args.hash_mb, max(1, args.runs // 2))
            stream = bench_copy_without_exec(root, sftp_only, args.copy_mb, max(1, args.runs // 2))
            if args.real_size_gb:
                bench_real_size(root, server, args.real_size_gb)
        finally:
            server.stop()
            sftp_only.stop()

    print(
        f"Promotion of a 60-file release (median of {args.runs}; window seen by a separate process)"
    )
    print(
        f"{'backend':8} {'public X.Y.Z/':18} {'freeze':>7} {'promote+check':>14}"
        f" {'total ms':>9} {'window ms':>10} {'max':>7} {'loop ms':>8} {'trips':>6}"
    )
    for backend, case, r in promotion:
        print(
            f"{backend:8} {case:18} {r['freeze']:7.1f} {r['promote']:14.1f}"
            f" {r['total']:9.1f} {r['window']:10.2f} {r['window_max']:7.2f}"
            f" {r['loop']:8.3f} {r['trips']:6.0f}"
        )
    print("\nScan of 6 open releases (60 files each: 6 x 2 folders)")
    print(f"{'backend':8} {'scan':26} {'ms':>8}  round trips")
    for backend, label, ms, trips in scan:
        print(f"{backend:8} {label:26} {ms:8.1f}  {trips}")
    print(f"\nSHA-256 of a {args.hash_mb} MB file")
    print(f"{'how':34} {'ms':>8}")
    for label, ms in hashing:
        print(f"{label:34} {ms:8.0f}")
    ms, peak = stream
    print(f"\nThe bot's copy of a {args.copy_mb} MB file without exec (through this machine)")
    print(f"{ms:.0f} ms, peak traced memory {peak:.1f} MiB")


if __name__ == "__main__":
    main()
