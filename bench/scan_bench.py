"""What a scan costs on release day over SFTP: five releases staged at once, ~60 files each
(every required file, the rest docs pages), on the real gate (SQLite file, the test team)
and a loopback OpenSSH sshd that it starts itself.

    .venv/bin/python bench/scan_bench.py [--runs 20] [--rtt-ms 40]

For each way of listing, after two scans (the connection, the hashes): the median time of a
steady-state ``gate.scan()`` and its round trips by kind (the storage's request counter).
"one look" is the scan as it is (one command on the server for every open release); "one by
one" lists each release on its own, as the scan did before (an ``lstat`` and a listing per
folder), and is what a server without commands still gets. With ``--rtt-ms``, each is
measured again through a relay in this process that adds that round trip (loopback has
none: there a command's own cost, a session and a few processes on the server, shows
alone). Prints a table; not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.domain.files import StagedFile
from bot.domain.tags import ReleaseTag
from bot.storage.sftp import SftpStorage
from tests.conftest import World  # the test team, reused as the bench team
from tests.sshd import SshServer
from tests.storage.conftest import sftp_storage

FIVE = ["3.14.1", "3.13.10", "3.12.12", "3.15.0a3", "3.14.2rc1"]


class DelayLink:
    """A TCP relay on loopback to ``port`` that holds every chunk ``rtt / 2`` seconds each
    way: a link with that round trip for this process alone (no system setting changed)."""

    def __init__(self, port: int, rtt: float) -> None:
        self.target, self.delay = port, rtt / 2
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.port = 0

        async def serve() -> None:
            server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
            self.port = server.sockets[0].getsockname()[1]
            ready.set()
            async with server:
                await server.serve_forever()

        threading.Thread(target=self.loop.run_until_complete, args=(serve(),), daemon=True).start()
        ready.wait()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def pump() -> None:
            while True:
                data = await reader.read(1 << 16)
                queue.put_nowait((self.loop.time() + self.delay, data))
                if not data:
                    return

        async def drain() -> None:
            while True:
                due, data = await queue.get()
                await asyncio.sleep(max(0.0, due - self.loop.time()))
                if not data:
                    writer.close()
                    return
                writer.write(data)
                await writer.drain()

        with contextlib.suppress(ConnectionError):
            await asyncio.gather(pump(), drain())


def through(
    server: SshServer, link: DelayLink, staging: Path, public: Path, cls: type[SftpStorage]
) -> SftpStorage:
    """A storage on ``server`` reached through ``link`` (its host key under the relay's port)."""
    known = server.root / f"known_hosts-{link.port}"
    known.write_text(server.known_hosts.read_text().replace(f"]:{server.port} ", f"]:{link.port} "))
    return cls(
        "127.0.0.1",
        link.port,
        server.user,
        server.client_key,
        known,
        str(staging),
        str(public),
        connect_timeout=5,
    )


class OneByOne(SftpStorage):
    """The scan as it was: every release listed on its own."""

    def list_all_staging(
        self, tags: Sequence[ReleaseTag]
    ) -> dict[str, dict[str, StagedFile] | None]:
        return {}


def scans(
    root: Path, server: SshServer, cls: type[SftpStorage], runs: int, rtt: float
) -> tuple[float, str]:
    """The median ms of a steady-state scan, and its round trips."""
    root.mkdir(parents=True)
    world = World(root)
    storage = (
        through(server, DelayLink(server.port, rtt), world.staging, world.public, cls)
        if rtt
        else sftp_storage(server, world.staging, world.public, cls)
    )
    world.storage = storage  # type: ignore[assignment]
    world.start()
    for tag in FIVE:
        written = world.stage(tag)
        for n in range(60 - len(written)):
            world.write(tag, f"docs/page-{n:02d}.html", f"page {n} of {tag}")
    try:
        for _ in range(2):
            asyncio.run(world.gate.scan())
        times, trips = [], Counter[str]()
        for _ in range(runs):
            before = Counter(storage.requests)
            started = time.perf_counter()
            asyncio.run(world.gate.scan())
            times.append((time.perf_counter() - started) * 1000)
            trips = Counter(storage.requests) - before
    finally:
        storage.close()
    return statistics.median(times), ", ".join(f"{k} {v}" for k, v in sorted(trips.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument(
        "--rtt-ms", type=float, default=0, help="also through a relay adding this round trip"
    )
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="relbot-bench-") as tmp:
        root = Path(tmp)
        server = SshServer.create(root / "sshd")
        sftp_only = SshServer.create(
            root / "sshd-sftp-only", extra_config="ForceCommand internal-sftp"
        )
        server.start()
        sftp_only.start()
        try:
            for rtt in sorted({0.0, args.rtt_ms / 1000}):
                for label, srv, cls in (
                    ("exec", server, SftpStorage),
                    ("exec", server, OneByOne),
                    ("sftp only", sftp_only, SftpStorage),
                ):
                    way = "one look" if cls is SftpStorage and srv is server else "one by one"
                    ms, trips = scans(root / f"{label}-{way}-{rtt}", srv, cls, args.runs, rtt)
                    rows.append((f"{rtt * 1000:g}", label, way, ms, trips))
        finally:
            server.stop()
            sftp_only.stop()
    print(f"Steady-state scan of 5 open releases, ~60 files each (median of {args.runs})")
    print(f"{'rtt ms':>6} {'server':10} {'listing':11} {'ms':>7}  round trips")
    for rtt_ms, label, way, ms, trips in rows:
        print(f"{rtt_ms:>6} {label:10} {way:11} {ms:7.1f}  {trips}")


if __name__ == "__main__":
    main()
