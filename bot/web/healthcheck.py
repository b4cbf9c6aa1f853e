"""``relbot health``: ask the running bot's ``/healthz`` where the config says it listens,
so a container's HEALTHCHECK follows ``[health] host`` and ``port``."""

from __future__ import annotations

import ipaddress

import httpx

from bot.config import Config

TIMEOUT = 4.0  # seconds; below Docker's default health check timeout (5 s in the Dockerfile)


def probe_url(host: str, port: int) -> str:
    """The URL to probe: a wildcard bind address is reached on the loopback of its family."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:  # a host name
        return f"http://{host}:{port}/healthz"
    if address.is_unspecified:
        address = ipaddress.ip_address("::1" if address.version == 6 else "127.0.0.1")
    shown = f"[{address}]" if address.version == 6 else str(address)
    return f"http://{shown}:{port}/healthz"


def probe(config: Config) -> tuple[bool, str]:
    """(healthy, one line saying why). Never raises: any failure is "unhealthy"."""
    settings = config.model.health
    if settings is None:
        return False, f"{config.origin} has no [health] table; add one with a port."
    return probe_at(probe_url(settings.host, settings.port))


def probe_at(url: str) -> tuple[bool, str]:
    """(healthy, one line saying why) of the ``/healthz`` at ``url``. Never raises."""
    try:
        response = httpx.get(url, timeout=TIMEOUT, trust_env=False)  # never via a proxy
    except httpx.HTTPError as err:
        return False, f"{url} did not answer ({type(err).__name__})."
    if response.status_code != 200:
        return False, f"{url} answered {response.status_code}: {response.text.strip()[:200]}"
    return True, f"{url} answered 200."
