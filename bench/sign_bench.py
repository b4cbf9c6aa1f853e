"""Signing benchmark, for 60 files over SFTP to a loopback OpenSSH server and on local folders,
against the private Sigstore instance of the tests:

- ``relbot sign``: everything it does after the login (the token is made beforehand): list
  staging, hash every file (on the server for SFTP), check for existing bundles, get one
  certificate, log 60 signatures, write 180 sidecars (temporary name + rename each), read
  every bundle back and verify it;
- signing at the confirmation: the pipeline's sign step on the bot's copies that the freeze
  has just made and hashed (the freeze itself is not timed: a confirmation freezes whether
  it signs or not): one certificate, 60 signatures logged, every bundle verified, 180
  signature files added to the bot's copies (read-only, hashed as written), the signed plan
  journaled.

With ``--rekor v2`` the instance signs as Sigstore's public-good instance is moving to: a
timestamp authority's RFC 3161 timestamp for each signature, then a Rekor v2 log that answers
an entry only once its batch is in the log (``--batch-delay``, 2 s by default: rekor-tiles
integrates about once a second, and an entry can wait for the batch after its own).

    .venv/bin/python bench/sign_bench.py [--runs 3] [--files 60] [--kb 1024] [--rekor v1|v2]

Prints a table; not a test. Everything lives in a temporary folder removed at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sigstore.models import ClientTrustConfig
from sigstore.oidc import IdentityToken

from bot.domain.history import ReleaseState
from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.profile import load_profile
from bot.domain.tags import ReleaseTag
from bot.journal.store import StateStore
from bot.ports import Storage
from bot.service.connections import Connections
from bot.service.pipeline.sign import Sign
from bot.service.pipeline.steps import BOT, Run
from bot.signing.login import Handover, Logins
from bot.signing.signer import sign_release
from bot.signing.verifier import SigstoreVerifier
from bot.storage.local import LocalStorage
from tests.sigstore_instance import SigstoreInstance
from tests.sshd import SshServer
from tests.storage.conftest import sftp_storage

TAG = ReleaseTag.parse("3.14.1")
RM = ("hugo@python.org", "https://github.com/login/oauth")


def stage(staging: Path, count: int, kb: int) -> list[str]:
    folder = staging / str(TAG)
    folder.mkdir(parents=True)
    names = [f"python-{TAG}-file{i:02d}.zip" for i in range(count)]
    for i, name in enumerate(names):
        (folder / name).write_bytes(i.to_bytes(4, "big") * (kb * 256))
    return names


def one_run(storage: Storage, instance: SigstoreInstance, trust_file: Path) -> tuple[float, int]:
    trust = ClientTrustConfig.from_json(trust_file.read_text())
    verifier = SigstoreVerifier(str(trust_file), lambda tag: RM)
    token = IdentityToken(instance.token(*RM))  # the login, outside the measurement
    started = time.perf_counter()
    listing = storage.list_staging(TAG)
    assert listing is not None
    paths = sorted(p for p in listing if p.endswith(".zip"))
    outcome = sign_release(
        TAG, storage, verifier, lambda: trust, paths, lambda tag: RM, lambda: token, listing
    )
    elapsed = time.perf_counter() - started
    assert outcome.ok, outcome.report()
    return elapsed, len(outcome.signed)


class _NoChat:
    async def post(self, message: object) -> str:
        return ""

    async def update(self, ref: str, message: object) -> None:
        return None


def at_confirmation(
    storage: Storage, staging: Path, instance: SigstoreInstance, trust_file: Path, state: Path
) -> tuple[float, int]:
    """The sign step of a confirmed plan whose files were just frozen (as the gate runs it)."""
    folder = staging / str(TAG)
    files = tuple(
        PlanFile(p.name, f"{TAG.version}/{p.name}", "source", p.stat().st_size, _sha256(p))
        for p in sorted(folder.iterdir())
    )
    plan = PublishPlan(TAG, files)
    assert storage.freeze(plan) == []  # what the confirmation does before the pipeline
    verifier = SigstoreVerifier(str(trust_file), lambda tag: RM)
    store = StateStore(state)
    logins = Logins()
    conn = Connections(storage, _NoChat(), verifier=verifier)  # type: ignore[arg-type]
    step = Sign(conn, store, load_profile("cpython"), logins, actor=BOT)
    trust = ClientTrustConfig.from_json(trust_file.read_text())
    token = IdentityToken(instance.token(*RM))  # the login, outside the measurement
    logins.hand_over(TAG, Handover(token, RM, trust))
    release = ReleaseState(TAG, to_sign=tuple(f.path for f in files))
    release.steps_done["freeze"] = "copied and hashed"
    started = time.perf_counter()
    detail = asyncio.run(step.run(Run(plan, release)))
    elapsed = time.perf_counter() - started
    store.close()
    assert detail.startswith(f"{len(files)} files signed"), detail
    return elapsed, len(files)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--files", type=int, default=60)
    parser.add_argument("--kb", type=int, default=1024, help="size of each staged file")
    parser.add_argument("--rekor", choices=("v1", "v2"), default="v1")
    parser.add_argument(
        "--batch-delay", type=float, default=2.0, help="seconds a Rekor v2 batch stays open"
    )
    args = parser.parse_args()
    version = int(args.rekor[1])
    results: dict[str, list[float]] = {"sftp": [], "local": []}
    confirming: dict[str, list[float]] = {"sftp": [], "local": []}
    instance = SigstoreInstance(rekor_version=version, batch_delay=args.batch_delay)
    with tempfile.TemporaryDirectory() as tmp, instance:
        root = Path(tmp)
        trust_file = instance.write_trust_config(root / "trust.json")
        server = SshServer.create(root / "sshd")
        server.start()
        try:
            for run in range(args.runs):
                for kind in ("sftp", "local"):
                    base = root / f"{kind}-{run}"
                    staging, public = base / "staging", base / "public"
                    stage(staging, args.files, args.kb)
                    storage: Storage = (
                        sftp_storage(server, staging, public)
                        if kind == "sftp"
                        else LocalStorage(staging, public)
                    )
                    elapsed, signed = one_run(storage, instance, trust_file)
                    assert signed == args.files
                    results[kind].append(elapsed)
                    base = root / f"{kind}-confirm-{run}"
                    staging, public = base / "staging", base / "public"
                    stage(staging, args.files, args.kb)
                    public.mkdir(parents=True)
                    storage = (
                        sftp_storage(server, staging, public)
                        if kind == "sftp"
                        else LocalStorage(staging, public)
                    )
                    elapsed, signed = at_confirmation(
                        storage, staging, instance, trust_file, base / "state.db"
                    )
                    confirming[kind].append(elapsed)
        finally:
            server.stop()
    log = f"Rekor v2, batches of {args.batch_delay:g} s" if version == 2 else "Rekor v1"
    print(f"{args.files} files of {args.kb} KiB, {args.runs} runs, {log} (login excluded)")
    print(f"{'signing':<17} {'storage':<8} {'median s':>9} {'min s':>7} {'max s':>7}")
    for label, table in (("relbot sign", results), ("at confirmation", confirming)):
        for kind, times in table.items():
            median, low, high = statistics.median(times), min(times), max(times)
            print(f"{label:<17} {kind:<8} {median:>9.2f} {low:>7.2f} {high:>7.2f}")


if __name__ == "__main__":
    main()
