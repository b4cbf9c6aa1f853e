"""Signing benchmark: ``relbot sign``'s work for 60 staged files, over SFTP to a loopback
OpenSSH server and on local folders, against the private Sigstore instance of the tests.

    .venv/bin/python bench/sign_bench.py [--runs 3] [--files 60] [--kb 1024]

Times everything ``relbot sign`` does after the login (the token is made beforehand): list
staging, hash every file (on the server for SFTP), check for existing bundles, get one
certificate, log 60 signatures, write 180 sidecars (temporary name + rename each), read every
bundle back and verify it. Prints a table; not a test. Everything lives in a temporary folder
removed at the end.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sigstore.models import ClientTrustConfig
from sigstore.oidc import IdentityToken

from bot.domain.tags import ReleaseTag
from bot.ports import Storage
from bot.signatures import SigstoreVerifier
from bot.signing import sign_release
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--files", type=int, default=60)
    parser.add_argument("--kb", type=int, default=1024, help="size of each staged file")
    args = parser.parse_args()
    results: dict[str, list[float]] = {"sftp": [], "local": []}
    with tempfile.TemporaryDirectory() as tmp, SigstoreInstance() as instance:
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
        finally:
            server.stop()
    print(f"relbot sign, {args.files} files of {args.kb} KiB, {args.runs} runs (login excluded)")
    print(f"{'storage':<8} {'median s':>9} {'min s':>7} {'max s':>7}")
    for kind, times in results.items():
        print(f"{kind:<8} {statistics.median(times):>9.2f} {min(times):>7.2f} {max(times):>7.2f}")


if __name__ == "__main__":
    main()
