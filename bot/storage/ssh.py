"""One SSH connection to the download server, shared and re-established: host keys checked
against known_hosts (never accepted blindly), the client key loaded, a dead connection
replaced with a short backoff, and commands run over exec channels with their exit status.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn, TypeVar

import paramiko

from bot.errors import StagingUnreachable, StorageError

log = logging.getLogger(__name__)

T = TypeVar("T")

_RECONNECT_DELAYS = (0.2, 0.5)  # seconds between connection attempts within one call
_EXEC_PROBE = "sha256sum --version >/dev/null && echo relbot-exec-ok"
CONNECTION_ERRORS = (OSError, EOFError, paramiko.SSHException)
KEEPALIVE_SECONDS = 30  # an idle connection between scans is not dropped by a firewall
MAX_COMMAND = 100_000  # bytes per exec command: Linux caps one argument at 128 KiB
PAST_LIMIT = -2  # the status of a command whose output went past what the bot reads


def batches(items: Sequence[T], cost: Callable[[T], int]) -> Iterator[list[T]]:
    """Split ``items`` in order so that each command built from a batch stays well below
    the argument limit (``cost``: the bytes an item adds to the command)."""
    batch: list[T] = []
    size = 0
    for item in items:
        length = cost(item)
        if batch and size + length > MAX_COMMAND // 2:
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += length
    if batch:
        yield batch


class SshRefused(StagingUnreachable):
    """The server answered but the connection was refused (host key, client key):
    retrying cannot help until someone changes the configuration."""


class HostKeyRejected(SshRefused):
    """The server's host key is not in known_hosts, or differs from it. Never accepted."""


@dataclass
class Connection:
    client: paramiko.SSHClient
    sftp: paramiko.SFTPClient
    exec_allowed: bool | None = None  # probed on first need
    exec_noise: str = ""  # what the server printed besides the probe's answer, if anything
    uid: int | None = None  # the bot's uid on the server, learned on first need

    @property
    def alive(self) -> bool:
        transport = self.client.get_transport()
        return transport is not None and transport.is_active()

    def close(self) -> None:
        self.client.close()


class _RejectUnknownHost(paramiko.RejectPolicy):
    """paramiko's RejectPolicy, raising our error so the message says how to add the key."""

    def __init__(self, message: str) -> None:
        self.message = message

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> NoReturn:
        raise HostKeyRejected(self.message)


@dataclass(frozen=True)
class Endpoint:
    """Where and as whom to connect, and how long to wait."""

    host: str
    port: int
    user: str
    key_file: Path
    known_hosts: Path
    passphrase: str | None
    connect_timeout: float
    io_timeout: float

    @property
    def where(self) -> str:
        """The server as known_hosts and messages name it: ``host`` or ``[host]:port``."""
        return self.host if self.port == 22 else f"[{self.host}]:{self.port}"


class SshLink:
    """The shared connection to one server; calls are serialized by ``lock`` because the
    gate runs them in worker threads. ``requests`` counts round trips by kind."""

    def __init__(self, endpoint: Endpoint, requests: Counter[str]) -> None:
        self.endpoint = endpoint
        self.where = endpoint.where
        self.requests = requests
        self.lock = threading.Lock()
        self._connection: Connection | None = None

    def call(self, what: str, op: Callable[[Connection], T]) -> T:
        """Run ``op`` on the shared connection, connecting first when needed.

        A connection found dead (the server restarted since the last call) is replaced
        and ``op`` run once more: every operation here is idempotent.
        """
        with self.lock:
            while True:
                fresh = self._connection is None or not self._connection.alive
                if fresh:
                    self.drop()
                    self._connection = self._connect()
                conn = self._connection
                assert conn is not None
                try:
                    return op(conn)
                except TimeoutError as err:
                    self.drop()
                    raise StagingUnreachable(
                        f"{self.where} stopped answering while trying to {what}."
                    ) from err
                except CONNECTION_ERRORS as err:
                    if conn.alive:
                        raise StorageError(
                            f"Cannot {what} on {self.where}: {reason(err)}."
                        ) from err
                    if fresh:  # lost at once: the next try is the caller's (the next scan)
                        raise StagingUnreachable(
                            f"Lost the connection to {self.where} while trying to {what}; "
                            "it is re-established on the next try."
                        ) from err
                    # A connection that died since the last call: once more on a new one.

    def drop(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def exec_allowed(self, conn: Connection) -> bool:
        """Whether the server runs our commands (``ForceCommand internal-sftp`` does not:
        it answers every command with an SFTP server, which prints nothing here)."""
        if conn.exec_allowed is None:
            try:
                status, out, _err = self.exec(conn, _EXEC_PROBE)
                lines = out.decode(errors="replace").splitlines()
                conn.exec_allowed = status == 0 and lines == ["relbot-exec-ok"]
                if "relbot-exec-ok" in lines and not conn.exec_allowed:
                    # A greeting (a login script's echo, a wrapper's banner) around every
                    # command's output: nothing read from a command could be trusted.
                    conn.exec_noise = next(line for line in lines if line != "relbot-exec-ok")
            except paramiko.SSHException:
                if not conn.alive:
                    raise
                conn.exec_allowed = False
        return conn.exec_allowed

    def exec(
        self, conn: Connection, command: str, *, limit: int | None = None
    ) -> tuple[int, bytes, bytes]:
        """Run ``command`` on the server; returns (exit status, stdout, stderr). With
        ``limit``, no more than ``limit`` bytes of stdout are read: past them the command is
        left (its channel closed) and the status is :data:`PAST_LIMIT`."""
        self.requests["exec"] += 1
        transport = conn.client.get_transport()
        if transport is None:
            raise EOFError  # closed: `call` says the connection was lost
        try:
            channel = transport.open_session(timeout=self.endpoint.io_timeout)
        except paramiko.SSHException as refused:
            if str(refused) == "Timeout opening channel.":  # paramiko's words: no answer in time
                raise TimeoutError from refused  # `call` says the server stopped answering
            raise
        try:
            channel.settimeout(self.endpoint.io_timeout)
            channel.exec_command(command)
            channel.shutdown_write()
            out = channel.makefile("rb").read(-1 if limit is None else limit + 1)
            if limit is not None and len(out) > limit:
                return PAST_LIMIT, b"", b""
            err = channel.makefile_stderr("rb").read()
            status = channel.recv_exit_status()
        finally:
            channel.close()
        if status == -1 and not conn.alive:  # no exit status: the connection died with it
            raise EOFError
        return status, out, err

    def _connect(self) -> Connection:
        """Connect, retrying briefly on network errors (not on refused keys), within about
        one ``connect_timeout`` in all: the caller (the scheduler) has its own backoff."""
        deadline = time.monotonic() + self.endpoint.connect_timeout
        for attempt, delay in enumerate(_RECONNECT_DELAYS, start=1):
            try:
                return self._open()
            except SshRefused:
                raise
            except StagingUnreachable as err:
                if time.monotonic() + delay > deadline:
                    raise
                log.warning(
                    "storage: connecting to %s failed (attempt %d: %s); retrying in %.1f s",
                    self.where,
                    attempt,
                    err,
                    delay,
                )
                time.sleep(delay)
        return self._open()  # the last attempt: its error is the caller's

    def _open(self) -> Connection:
        e = self.endpoint
        self.requests["connect"] += 1
        keyscan = f"ssh-keyscan -p {e.port} {e.host} >> {e.known_hosts}"
        client = paramiko.SSHClient()
        try:
            client.load_host_keys(str(e.known_hosts))
        except OSError as err:
            raise SshRefused(
                f"storage.known_hosts: cannot read {e.known_hosts} ({reason(err)}); "
                f"create it with the server's key: {keyscan} (check the fingerprint)."
            ) from err
        client.set_missing_host_key_policy(
            _RejectUnknownHost(
                f"The SSH host key of {self.where} is not in {e.known_hosts}; add it with "
                f"`{keyscan}` after checking its fingerprint with the server's admins."
            )
        )
        pkey = self._load_key()
        started = time.monotonic()
        try:
            client.connect(
                e.host,
                e.port,
                username=e.user,
                pkey=pkey,
                timeout=e.connect_timeout,
                banner_timeout=e.connect_timeout,
                auth_timeout=e.connect_timeout,
                allow_agent=False,
                look_for_keys=False,
            )
            transport = client.get_transport()
            assert transport is not None
            transport.set_keepalive(KEEPALIVE_SECONDS)
            if isinstance(transport.sock, socket.socket):
                # Each SFTP request at once, not held back by Nagle's algorithm until the
                # server's delayed ACK (40 ms): a 16 MB copy without exec took 16 s, not 0.4.
                transport.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sftp = client.open_sftp()
            channel = sftp.get_channel()
            if channel is not None:
                channel.settimeout(e.io_timeout)
        except HostKeyRejected:
            client.close()
            raise
        except paramiko.BadHostKeyException as err:
            client.close()
            raise HostKeyRejected(
                f"The SSH host key of {self.where} differs from the one in "
                f"{e.known_hosts}: someone may be intercepting the connection. If the "
                f"server's key really changed, remove the old line (ssh-keygen -R "
                f"'{self.where}' -f {e.known_hosts}) and add the new one with `{keyscan}`."
            ) from err
        except paramiko.AuthenticationException as err:
            client.close()
            if str(err) == "Authentication timeout.":  # paramiko's words: no answer, no refusal
                raise StagingUnreachable(
                    f"{self.where} did not answer the login within {e.connect_timeout:g} s; "
                    "it is tried again on the next scan."
                ) from err
            raise SshRefused(
                f"{self.where} refused the key {e.key_file} for user {e.user}; add "
                f"its public key to ~{e.user}/.ssh/authorized_keys on the server."
            ) from err
        except CONNECTION_ERRORS as err:
            transport = client.get_transport()
            handshake = transport is not None and not transport.initial_kex_done
            client.close()
            # A server that took the connection and did not finish the handshake in time (a
            # stopped sshd): paramiko says "No existing session" or that the banner could
            # not be read, whichever of its two timers ran out first.
            late = handshake and time.monotonic() - started >= e.connect_timeout
            why = f"no SSH handshake within {e.connect_timeout:g} s" if late else reason(err)
            raise StagingUnreachable(
                f"Cannot reach {self.where} ({why}); check the host, the port and the network."
            ) from err
        return Connection(client, sftp)

    def _load_key(self) -> paramiko.PKey:
        """The client key (Ed25519, RSA or ECDSA), decrypted with the passphrase if any."""
        e = self.endpoint
        password = e.passphrase or None
        for kind in (paramiko.Ed25519Key, paramiko.RSAKey, paramiko.ECDSAKey):
            try:
                return kind.from_private_key_file(str(e.key_file), password=password)
            except paramiko.PasswordRequiredException as err:
                raise SshRefused(
                    f"storage.key_file: {e.key_file} is protected by a passphrase; "
                    "provide it through the configured environment variable."
                ) from err
            except OSError as err:
                raise SshRefused(
                    f"storage.key_file: cannot read {e.key_file} ({reason(err)})."
                ) from err
            except (paramiko.SSHException, ValueError):
                continue  # the next kind (what the last kind said would mislead)
        raise SshRefused(
            f"storage.key_file: {e.key_file} is not an Ed25519, RSA or ECDSA private key "
            "this passphrase opens; check the file and the passphrase."
        )


def reason(err: BaseException) -> str:
    """An error in a few words: its ``strerror`` when it has one."""
    if isinstance(err, paramiko.ssh_exception.NoValidConnectionsError) and err.errors:
        # "Unable to connect to port 22 on HOST" in paramiko's words: the system's reason
        # for the first address tried (Connection refused, No route to host) says more.
        err = next(iter(err.errors.values()))
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    return str(err).rstrip(".") or type(err).__name__  # the caller ends the sentence


def first_line(data: bytes) -> str:
    """The first line of a command's output, for a message."""
    lines = data.decode(errors="replace").strip().splitlines()
    return lines[0] if lines else ""
