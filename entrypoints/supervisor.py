"""`club up`: embedded servers (when no URLs are set), migrations, every role.

Roles run as child processes that die with the supervisor (parent-death signal)
and are restarted if they crash. Ctrl-C stops the roles first, then the servers.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import attrs

from adapters.embedded.nats import EmbeddedNats
from adapters.embedded.postgres import EmbeddedPostgres
from adapters.embedded.process import spawn_role, stop
from entrypoints import bootstrap
from entrypoints.settings import Settings

ROLES: tuple[tuple[str, ...], ...] = (
    ("api",),
    ("relay",),
    ("projector", "rosters"),
    ("projector", "statistics"),
)
MAX_BACKOFF_S = 10.0


@attrs.define
class Child:
    role: tuple[str, ...]
    proc: subprocess.Popen[bytes]
    restarts: int = 0


def up(settings: Settings) -> int:
    servers: list[EmbeddedPostgres | EmbeddedNats] = []
    stopping = False

    def request_stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    children: list[Child] = []
    try:
        database_url = settings.database_url
        if database_url is None:
            pg = EmbeddedPostgres(settings.data_dir / "postgres")
            servers.append(pg)
            database_url = pg.start()
        nats_url = settings.nats_url
        if nats_url is None:
            embedded_nats = EmbeddedNats(settings.data_dir / "nats")
            servers.append(embedded_nats)
            nats_url = embedded_nats.start()
        bootstrap.migrate(database_url, nats_url)
        env = os.environ | {
            "CLUB_DATABASE_URL": database_url,
            "CLUB_NATS_URL": nats_url,
            "CLUB_OPERATOR_TOKEN": settings.operator_token,
        }
        children = [Child(role, spawn_role(_argv(role), env)) for role in ROLES]
        _announce(settings, database_url, nats_url)
        while not stopping:
            time.sleep(0.2)
            for child in children:
                if child.proc.poll() is not None and not stopping:
                    _restart(child, env)
    finally:
        for child in children:
            stop(child.proc, signal.SIGTERM)
        for server in reversed(servers):
            server.stop()
    print("club: stopped; data kept in", settings.data_dir)
    return 0


def _argv(role: tuple[str, ...]) -> list[str]:
    return [sys.executable, "-m", "entrypoints.cli", *role]


def _restart(child: Child, env: dict[str, str]) -> None:
    code = child.proc.returncode
    delay = min(MAX_BACKOFF_S, 0.5 * 2**child.restarts)
    print(f"club: {' '.join(child.role)} exited ({code}); restarting in {delay:.1f}s")
    time.sleep(delay)
    child.restarts += 1
    child.proc = spawn_role(_argv(child.role), env)


def _announce(settings: Settings, database_url: str, nats_url: str) -> None:
    base = f"http://{settings.http_host}:{settings.http_port}"
    print(
        "\nClub is up. Ctrl-C stops everything; data stays in "
        f"{Path(settings.data_dir)}\n"
        f"  API            {base}  (docs: {base}/docs)\n"
        f"  database       {database_url}\n"
        f"  NATS           {nats_url}\n"
        f"  operator token {settings.operator_token}\n",
        flush=True,
    )
