"""`/metrics` of a background role (relay, projector, worker, saga) on its own port.

A small asyncio server on the role's own loop, not prometheus_client's threaded
one: before each answer it reads the role's own hop (`refresh`) with the role's
database engine and broker connection, which live on this loop. A scrape never
fails because of that read: past its budget, or on an error, the last values stand.

Ports: a role run by hand serves only when CLUB_METRICS_PORT names one (two roles
started by hand would otherwise fight for a default). `club up` gives each role a
port of its own: CLUB_METRICS_PORT + the role's index when set, free ports when
unset, none when 0 (`role_ports`).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Awaitable, Callable, Iterable, Iterator

import structlog
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import CollectorRegistry

from adapters.embedded.process import free_port
from entrypoints.config.catalogue import Role
from entrypoints.config.settings import ConfigError, Settings

log = structlog.get_logger()

Refresh = Callable[[], Awaitable[None]]
SERVING_KINDS = ("relay", "projector", "worker", "saga")  # through serve_metrics
# Roles `club up` gives a metrics port: the API starts its own server with its app
# (entrypoints/runtime/bootstrap.py:api_metrics), on its loop.
PORTED_KINDS = ("api", *SERVING_KINDS)
REFRESH_BUDGET_S = 2.0
REQUEST_BUDGET_S = 5.0  # a client that never finishes its request is dropped
MAX_HEAD = 8192
# The relay's own series, unlabelled: any other role would report them as 0 beside
# the relay's real values, and `absent()` could never fire.
RELAY_ONLY = frozenset(
    {
        "club_events_published",
        "club_relay_lease_held",
        "club_relay_lag_events",
        "club_outbox_oldest_unpublished_age_seconds",
    }
)


# The API reads the relay's lag and the outbox's age from the database (the whole
# chain); the relay's own counters it would only report as 0.
API_HIDES = RELAY_ONLY - {
    "club_relay_lag_events",
    "club_outbox_oldest_unpublished_age_seconds",
}


async def _nothing() -> None:
    return None


class MetricsServer:
    """`refresh` starts as nothing and is set once the role is built: the port
    answers (the process is alive) while the role still waits for its servers."""

    def __init__(
        self,
        host: str,
        port: int,
        hidden: frozenset[str] = frozenset(),
        *,
        shared: bool = False,
    ) -> None:
        """`shared`: processes of one role share the port (the API's workers, each
        scrape answered by one of them)."""
        self.host = host
        self.port = port
        self.shared = shared
        self.refresh: Refresh = _nothing
        self._server: asyncio.Server | None = None
        self._registry = CollectorRegistry(auto_describe=False)
        self._registry.register(_Without(hidden))

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._answer, self.host, self.port, limit=MAX_HEAD, reuse_port=self.shared
        )

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/metrics"

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    async def _answer(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        try:
            head = await asyncio.wait_for(
                reader.readuntil(b"\r\n\r\n"), REQUEST_BUDGET_S
            )
            status, body, kind = await self._respond(head[:MAX_HEAD])
            writer.write(
                f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                + body
            )
            await writer.drain()
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # a half request: nothing to answer
        except ConnectionError:
            pass  # the scraper went away
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _respond(self, head: bytes) -> tuple[str, bytes, str]:
        method, _, rest = head.decode("latin-1").partition(" ")
        path = rest.partition(" ")[0].partition("?")[0]
        if method not in ("GET", "HEAD"):
            return "405 Method Not Allowed", b"GET /metrics\n", "text/plain"
        if path != "/metrics":
            return "404 Not Found", b"only /metrics here\n", "text/plain"
        try:
            await asyncio.wait_for(self.refresh(), REFRESH_BUDGET_S)
        except Exception:  # the last values stand; the scrape still answers
            log.warning("metrics.refresh_failed", exc_info=True)
        body = generate_latest(self._registry) if method == "GET" else b""
        return "200 OK", body, CONTENT_TYPE_LATEST


class _Without:
    """The process's registry less the families another role owns."""

    def __init__(self, hidden: frozenset[str]) -> None:
        self._hidden = hidden

    def collect(self) -> Iterator[Metric]:
        return (m for m in REGISTRY.collect() if m.name not in self._hidden)


async def serve_metrics(settings: Settings, role: Role) -> MetricsServer | None:
    """None when this role serves no metrics (no port set, or 0). A port that
    cannot be bound is a setting to fix: one line, never a traceback."""
    port = settings.metrics_port
    if not port or role.kind not in SERVING_KINDS:
        return None
    host = settings.metrics_host
    hidden = frozenset() if role.kind == "relay" else RELAY_ONLY
    metrics = MetricsServer(host, port, hidden)
    try:
        await metrics.start()
    except OSError as e:
        msg = (
            f"CLUB_METRICS_PORT={port} on {host} cannot be used ({e.strerror}); "
            "stop what listens there, or set CLUB_METRICS_PORT (0: no metrics) "
            "and CLUB_METRICS_HOST"
        )
        raise ConfigError(msg) from None
    log.info("metrics.serving", role=" ".join(role.argv), url=metrics.url)
    return metrics


def role_ports(settings: Settings, roles: Iterable[Role]) -> dict[Role, int]:
    """`club up`'s port for each background role: base + index, or free ports."""
    serving = [role for role in roles if role.kind in PORTED_KINDS]
    base = settings.metrics_port
    if base == 0:
        return {}
    if base is None:
        return {role: free_port() for role in serving}
    ports = {role: base + index for index, role in enumerate(serving)}
    for port in ports.values():
        _check_free(settings.metrics_host, port, base)
    return ports


def _check_free(host: str, port: int, base: int) -> None:
    """Before anything starts: a role would otherwise exit and be restarted for ever."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as e:
            msg = (
                f"metrics port {port} on {host} (CLUB_METRICS_PORT={base} + a role's "
                f"index) cannot be used ({e.strerror}); set CLUB_METRICS_PORT to "
                "another base, leave it unset for free ports, or 0 for none"
            )
            raise ConfigError(msg) from None
        except OverflowError:
            msg = f"CLUB_METRICS_PORT={base} leaves no room for a port per role"
            raise ConfigError(msg) from None


def port_env(ports: dict[Role, int], role: Role) -> dict[str, str]:
    """The role's own CLUB_METRICS_PORT (the base in the supervisor's environment
    must not reach a role as its port)."""
    return {"CLUB_METRICS_PORT": str(ports.get(role, 0))}


def where_served(settings: Settings, ports: dict[Role, int]) -> str:
    """`club up`'s lines saying where each role's /metrics is."""
    if not ports:
        return "  metrics        none (CLUB_METRICS_PORT=0)\n"
    host = settings.metrics_host
    return "".join(
        f"  metrics        {' '.join(role.argv):<24} http://{host}:{port}/metrics\n"
        for role, port in ports.items()
    )
