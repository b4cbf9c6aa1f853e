"""python.org's own app (python/pythondotorg, vendored in tests/vendor/) on a real PostgreSQL,
for tests that must agree with what python.org really answers.

The session fixture :func:`pythondotorg_app` builds what it needs once and keeps it in a cache
folder outside the checkout (``$RELBOT_TEST_CACHE`` or ``~/.cache/relbot-tests``), keyed by the
archive's SHA-256: the unpacked source, a virtualenv of Python 3.13 with pythondotorg's own
locked dependencies, and a ``pg_dump`` of a migrated and seeded database. A warm start is then
one ``initdb``, one restore and one ``runserver``. Each test calls :meth:`PythonOrgApp.reset`:
a fresh database from the seeded template, which also clears the throttle counters (Django's
cache table lives in the database).

Seed: a staff user ``rm`` and a non-staff ``intern``, each with a tastypie API key and a DRF
token of known value, and the operating systems with python.org's primary keys (windows=1,
macos=2, source=3: ``add_to_pydotorg.py`` decides ``is_source`` by ``os_pk == 3``).
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import httpx
import pytest

VENDOR: Final = Path(__file__).parent / "vendor"
ARCHIVE: Final = VENDOR / "pythondotorg-0a7e8d1f.tar.gz"
ARCHIVE_SHA256: Final = "9eaf71291ceb200b0e769f98f2a7ada667a7ec6b30aa4520f5ab77b5c42b6065"
RELEASE_TOOLS: Final = VENDOR / "release-tools-a25ec43.tar.gz"
RELEASE_TOOLS_SHA256: Final = "2314e37cfb46c52b6e2bdbb5abf2276ee7d291868cc40513bcaed9170abad7f8"

RM_KEY: Final = "s3cr3t-4p1-k3y-0123456789abcdef"
RM_TOKEN: Final = "v2-staff-token-value"
INTERN_KEY: Final = "intern-key"
INTERN_TOKEN: Final = "plain-user-token"
USERS: Final = (("rm", RM_KEY, RM_TOKEN, True), ("intern", INTERN_KEY, INTERN_TOKEN, False))
# python.org's primary keys: add_to_pydotorg.py knows source as 3.
OSES: Final = (
    (1, "Windows", "windows"),
    (2, "macOS", "macos"),
    (3, "Source release", "source"),
    (4, "Android", "android"),
    (5, "iOS", "ios"),
)

_SEEDED: Final = "seeded"  # the template database
LIVE_DATABASE: Final = "pydotorg"  # the one runserver uses, re-made from the template by reset()
_START_TIMEOUT: Final = 120.0

# pythondotorg's own local settings, as its README runs them, but with DEBUG off (python.org's
# answers, not Django's debug pages) and only loopback hosts.
_SETTINGS: Final = """\
from pydotorg.settings.local import *  # noqa: F403

DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
"""

_SEED: Final = """\
from django.contrib.auth import get_user_model
from django.db import connection
from rest_framework.authtoken.models import Token
from tastypie.models import ApiKey

from apps.downloads.models import OS

User = get_user_model()
for name, key, token, staff in {users!r}:
    user = User.objects.create_user(name, name + "@example.org", "x", is_staff=staff)
    ApiKey.objects.update_or_create(user=user, defaults={{"key": key}})
    Token.objects.filter(user=user).delete()  # a signal made one of another value
    Token.objects.create(user=user, key=token)
for pk, name, slug in {oses!r}:
    OS.objects.create(pk=pk, name=name, slug=slug)
with connection.cursor() as cursor:
    cursor.execute("SELECT setval(pg_get_serial_sequence('downloads_os', 'id'), 100)")
"""


class AppUnavailable(Exception):
    """What is missing to run python.org's app here, in one sentence."""


class PythonOrgApp:
    """A running pythondotorg: :attr:`base_url` stands in for ``https://www.python.org/``."""

    def __init__(self, cache: Path, work: Path, timings: dict[str, float]) -> None:
        self.cache = cache
        self.work = work
        self.timings = timings
        self.pg_port = _free_port()
        self.port = _free_port()
        self._postgres: subprocess.Popen[bytes] | None = None
        self._server: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def url(self) -> str:
        """API v1's root, as relbot's ``[pydotorg] api_url`` would name it."""
        return self.base_url + "api/v1/"

    @property
    def source(self) -> Path:
        return self.cache / "src"

    @property
    def python(self) -> Path:
        return self.cache / "venv" / "bin" / "python"

    # -- the database

    def psql(self, sql: str, database: str = "postgres") -> str:
        """Run ``sql`` as the database's superuser; its output, unaligned."""
        done = subprocess.run(
            [
                _pg_bin("psql"),
                "-X",
                "-q",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                sql,
                *self._pg_args(database),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode:
            raise AppUnavailable(f"psql failed: {done.stderr.strip()}")
        return done.stdout

    def reset(self) -> None:
        """A fresh database for the next test: records, releases and throttle counters gone."""
        self.psql(f"DROP DATABASE IF EXISTS {LIVE_DATABASE} WITH (FORCE)")
        self.psql(f"CREATE DATABASE {LIVE_DATABASE} TEMPLATE {_SEEDED}")

    def django(self, script: str) -> str:
        """Run ``script`` in the app's Django (``manage.py shell``); its output."""
        done = subprocess.run(
            [str(self.python), "manage.py", "shell", "-c", script],
            cwd=self.source,
            env=self._env(LIVE_DATABASE),
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode:
            raise AppUnavailable(f"manage.py shell failed: {done.stderr.strip()[-2000:]}")
        return done.stdout

    # -- lifecycle

    def start(self) -> None:
        self._start_postgres()
        started = time.monotonic()
        self._prepare_template()
        self.reset()
        self.timings["database"] = time.monotonic() - started
        started = time.monotonic()
        self._start_server()
        self.timings["server"] = time.monotonic() - started

    def stop(self) -> None:
        for process in (self._server, self._postgres):
            if process is not None and process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        shutil.rmtree(self.work, ignore_errors=True)

    def log_tail(self) -> str:
        path = self.work / "runserver.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def _pg_args(self, database: str) -> list[str]:
        return ["-h", "127.0.0.1", "-p", str(self.pg_port), "-U", "postgres", "-d", database]

    def _env(self, database: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
        env |= {
            "DJANGO_SETTINGS_MODULE": "relbot_test_settings",
            "PYTHONPATH": str(self.work / "settings"),
            "DATABASE_URL": f"postgres://postgres@127.0.0.1:{self.pg_port}/{database}",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        return env

    def _start_postgres(self) -> None:
        data = self.work / "pgdata"
        as_postgres = _as_postgres()
        if as_postgres:
            shutil.chown(self.work, "postgres")
        _run(
            [
                *as_postgres,
                _pg_bin("initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
            ],
            "initdb",
        )
        log = open(self.work / "postgres.log", "wb")  # noqa: SIM115 - the server's own file
        self._postgres = subprocess.Popen(
            [
                *as_postgres,
                _pg_bin("postgres"),
                "-D",
                str(data),
                "-p",
                str(self.pg_port),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                f"unix_socket_directories={self.work}",
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + _START_TIMEOUT
        while True:
            ready = subprocess.run(
                [_pg_bin("pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.pg_port)],
                check=False,
            )
            if ready.returncode == 0:
                return
            if self._postgres.poll() is not None or time.monotonic() > deadline:
                tail = (self.work / "postgres.log").read_text(errors="replace")[-2000:]
                raise AppUnavailable(f"PostgreSQL did not start: {tail}")
            time.sleep(0.05)

    def _prepare_template(self) -> None:
        """The seeded template database: restored from the cached dump, or migrated, seeded
        and dumped once."""
        seed = _SEED.format(users=USERS, oses=OSES)
        # keyed by the seed too: another seed is another dump
        dump = self.cache / f"seeded-{hashlib.sha256(seed.encode()).hexdigest()[:12]}.dump"
        self.psql(f"CREATE DATABASE {_SEEDED}")
        settings = self.work / "settings"
        settings.mkdir(exist_ok=True)
        (settings / "relbot_test_settings.py").write_text(_SETTINGS)
        if dump.exists():
            _run(
                [_pg_bin("pg_restore"), "--no-owner", *self._pg_args(_SEEDED), str(dump)], "restore"
            )
            return
        env = self._env(_SEEDED)
        manage = [str(self.python), "manage.py"]
        for step in (["migrate", "--no-input"], ["createcachetable"]):
            _run([*manage, *step], " ".join(step), cwd=self.source, env=env)
        _run([*manage, "shell", "-c", seed], "seed", cwd=self.source, env=env)
        partial = dump.with_suffix(".partial")
        _run([_pg_bin("pg_dump"), "-Fc", "-f", str(partial), *self._pg_args(_SEEDED)], "pg_dump")
        partial.rename(dump)

    def _start_server(self) -> None:
        log = open(self.work / "runserver.log", "wb")  # noqa: SIM115 - the server's own file
        self._server = subprocess.Popen(
            [
                str(self.python),
                "manage.py",
                "runserver",
                "--noreload",
                "--skip-checks",
                f"127.0.0.1:{self.port}",
            ],
            cwd=self.source,
            env=self._env(LIVE_DATABASE),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + _START_TIMEOUT
        while True:
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(self.url + "downloads/os/", timeout=5).status_code == 200:
                    return
            if self._server.poll() is not None or time.monotonic() > deadline:
                raise AppUnavailable(f"pythondotorg's runserver did not start: {self.log_tail()}")
            time.sleep(0.1)


# -- building the cache ------------------------------------------------------------------------


def cache_root() -> Path:
    configured = os.environ.get("RELBOT_TEST_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "relbot-tests"


def unpacked(archive: Path, sha256: str, name: str) -> Path:
    """``archive`` unpacked once into the cache (keyed by its SHA-256); its top folder."""
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != sha256:
        raise AppUnavailable(f"{archive.name} is not the vendored snapshot (sha256 {digest}).")
    cache = cache_root() / f"{name}-{sha256[:16]}"
    cache.mkdir(parents=True, exist_ok=True)
    source = cache / "src"
    with _locked(cache):  # test workers unpack it once between them
        if not source.exists():
            with tempfile.TemporaryDirectory(dir=cache) as tmp, tarfile.open(archive) as tar:
                tar.extractall(tmp, filter="data")
                (top,) = Path(tmp).iterdir()
                top.rename(source)
    return cache


def python313() -> str:
    """The machine's Python 3.13: on PATH, or pyenv's."""
    found = shutil.which("python3.13")
    if found and _runs(found):
        return found
    pyenv_root = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    for candidate in sorted(glob.glob(f"{pyenv_root}/versions/3.13*/bin/python3.13"), reverse=True):
        if _runs(candidate):
            return candidate
    raise AppUnavailable(
        "python.org's app needs Python 3.13 (its downloads API does not run on "
        f"{sys.version_info.major}.{sys.version_info.minor}): install python3.13 on PATH or "
        "with pyenv."
    )


def _runs(python: str) -> bool:
    return subprocess.run([python, "-c", "pass"], capture_output=True, check=False).returncode == 0


def build_venv(cache: Path) -> None:
    """pythondotorg's locked dependencies (its ``uv.lock``, without the ``dev`` group, whose
    debug toolbar breaks requests after ~640 of them) in a virtualenv of Python 3.13."""
    venv = cache / "venv"
    if (venv / ".complete").exists():
        return
    python = python313()
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if uv is None:
        raise AppUnavailable("uv is not installed in relbot's virtualenv: run `make install`.")
    shutil.rmtree(venv, ignore_errors=True)
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    env.pop("VIRTUAL_ENV", None)
    env.pop("UV_PROJECT_ENVIRONMENT", None)
    requirements = cache / "requirements.txt"
    exported = _run(
        [uv, "export", "--frozen", "--no-hashes", "--no-emit-project", "--no-dev"],
        "uv export",
        cwd=cache / "src",
        env=env,
    )
    requirements.write_text(exported)
    _run([python, "-m", "venv", str(venv)], "venv")
    _run(
        [
            uv,
            "pip",
            "install",
            "--quiet",
            "--python",
            str(venv / "bin" / "python"),
            "-r",
            str(requirements),
        ],
        "uv pip install",
        env=env,
    )
    (venv / ".complete").touch()


@contextlib.contextmanager
def _locked(cache: Path) -> Iterator[None]:
    """One builder of the cache at a time (two pytest runs may start together)."""
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _run(
    command: list[str], what: str, *, cwd: Path | None = None, env: dict[str, str] | None = None
) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        tail = (done.stderr or done.stdout).strip()[-3000:]
        raise AppUnavailable(f"{what} failed while preparing python.org's app: {tail}")
    return done.stdout


def _pg_bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)
    if found:
        return found[0]
    on_path = shutil.which(name)
    if on_path is None:
        raise AppUnavailable(
            f"PostgreSQL's {name} is missing: install Debian's postgresql (`make system-deps`)."
        )
    return on_path


def _as_postgres() -> list[str]:
    """``initdb`` refuses root: as root, run PostgreSQL as the ``postgres`` account."""
    if os.geteuid() != 0:
        return []
    return ["runuser", "-u", "postgres", "--"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_app() -> PythonOrgApp:
    """Build what is missing in the cache, then start PostgreSQL and pythondotorg."""
    timings: dict[str, float] = {}
    started = time.monotonic()
    cache = unpacked(ARCHIVE, ARCHIVE_SHA256, "pythondotorg")
    with _locked(cache):
        timings["source"] = time.monotonic() - started
        started = time.monotonic()
        build_venv(cache)
        timings["venv"] = time.monotonic() - started
        work = Path(tempfile.mkdtemp(prefix="relbot-pythondotorg-"))
        app = PythonOrgApp(cache, work, timings)
        try:
            app.start()
        except BaseException:
            app.stop()
            raise
    return app


@pytest.fixture(scope="session")
def pythondotorg_app() -> Iterator[PythonOrgApp]:
    """python.org's own app, started once per session; call ``reset()`` before each use."""
    try:
        app = start_app()
    except AppUnavailable as err:
        pytest.fail(str(err), pytrace=False)
    _log_timings(app.timings)
    try:
        yield app
    finally:
        app.stop()


def _log_timings(timings: dict[str, float]) -> None:
    line = json.dumps({k: round(v, 2) for k, v in timings.items()})
    sys.stderr.write(f"\npythondotorg started: {line}\n")


def main() -> None:
    """``python -m tests.pythondotorg_app``: start it, print the timings, stop it."""
    started = time.monotonic()
    app = start_app()
    try:
        total = time.monotonic() - started
        print(
            json.dumps(
                {**{k: round(v, 2) for k, v in app.timings.items()}, "total": round(total, 2)}
            )
        )
    finally:
        app.stop()


if __name__ == "__main__":
    main()
