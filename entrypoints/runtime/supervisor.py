"""`club up`: embedded servers (when no URLs are set), migrations, every role.

Roles run as child processes that die with the supervisor (parent-death signal)
and are restarted if they crash; so are the embedded servers, until one keeps dying.
Ctrl-C stops the roles first, then the servers — also in the middle of a restart
pause, which is a deadline the loop checks, never a sleep.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import threading
import time

import attrs

from adapters.embedded.credentials import CredentialsFileError
from adapters.embedded.nats import EmbeddedNats
from adapters.embedded.postgres import EmbeddedPostgres
from adapters.embedded.process import spawn_role, wait_or_kill
from adapters.nats.authorization import role_users
from application.backoff import BackoffPolicy, Jitter
from entrypoints.config.auth_settings import kept_secret
from entrypoints.config.masking import masked
from entrypoints.config.running import Running, announce, withdraw
from entrypoints.config.settings import ConfigError, Settings, stream_retention
from entrypoints.runtime import bootstrap, preflight
from entrypoints.runtime.metrics_server import port_env, role_ports, where_served
from entrypoints.runtime.provider_urls import sandbox_plays
from entrypoints.runtime.unprivileged import RolesUser, roles_user
from entrypoints.runtime.watched import ServerGaveUpError, WatchedServer

MAX_BACKOFF_S = 10.0
# A dying role waits 0.5 s, then twice as long each time, 10 s at most.
RESTART_BACKOFF = BackoffPolicy(first=0.5, cap=MAX_BACKOFF_S, jitter=Jitter.NONE)
STABLE_S = 60.0  # a role that ran this long before it crashed starts its pauses anew
TICK_S = 0.2


@attrs.define
class Child:
    role: bootstrap.Role
    env: dict[str, str]
    as_nobody: bool = False
    proc: subprocess.Popen[bytes] | None = None
    restarts: int = 0
    restart_at: float | None = None  # monotonic; set while it waits to restart
    started_at: float = attrs.field(factory=time.monotonic)


def nats_user(role: bootstrap.Role) -> str:
    """The broker user a role connects as (adapters/nats/authorization.py). A role
    not named here gets the read-only `api` user: one that needs more rights gets
    its own user there, never admin's by default."""
    if role.durable is not None:
        return f"consumer-{role.durable}"
    return "relay" if role.kind == "relay" else "api"


def roles_to_start(settings: Settings) -> list[bootstrap.Role]:
    """Every role, but a sandbox only where it plays the provider configured."""
    played = {
        "email": settings.email_provider_url,
        "payment": settings.payment_provider_url,
    }
    return [
        role
        for role in bootstrap.ROLES
        if role.kind != "sandbox" or sandbox_plays(played[role.name])
    ]


def up(settings: Settings) -> int:
    lock = preflight.claim_data_dir(settings)
    try:
        preflight.check_http_port_free(settings)
        preflight.check_kept_secret(settings)
        return _up(settings)
    finally:
        preflight.release(lock)


def _up(settings: Settings) -> int:
    stopping = threading.Event()

    def request_stop(*_: object) -> None:
        stopping.set()

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    servers: list[WatchedServer] = []
    children: list[Child] = []
    code = 0
    metrics = role_ports(settings, bootstrap.ROLES)  # a taken port: one line
    try:
        database_url = settings.database_url
        if database_url is None:
            pg = EmbeddedPostgres(settings.data_dir / "postgres")
            servers.append(WatchedServer("PostgreSQL", pg, _say))
            database_url = pg.start()
        nats_urls = _nats_urls(settings, servers)
        bootstrap.migrate(
            database_url, nats_urls["admin"], stream_retention(settings.retention)
        )
        base = os.environ | {
            "CLUB_DATABASE_URL": database_url,
            "CLUB_OPERATOR_TOKEN": settings.operator_token,
            # The API checks what the payment sandbox signs: one secret for both.
            "CLUB_PAYMENT_WEBHOOK_SECRET": settings.payment_webhook_secret
            or secrets.token_urlsafe(32),
        }
        if not settings.auth.configured:  # development: HS256, `club token` signs
            base["CLUB_AUTH_SECRET"] = kept_secret(settings.data_dir)
        # The operator's commands in another terminal find us (config/running.py).
        announce(
            settings.data_dir,
            Running(
                database_url=database_url, nats_url=nats_urls["admin"], pid=os.getpid()
            ),
        )
        user = roles_user(settings)
        children = [
            Child(
                role,
                base
                | {"CLUB_NATS_URL": nats_urls[nats_user(role)]}
                | port_env(metrics, role),
                as_nobody=user.as_nobody,
            )
            for role in roles_to_start(settings)
        ]
        for child in children:
            child.proc = _spawn(child)
        _announce(settings, database_url, nats_urls["admin"], servers, user)
        print(where_served(settings, metrics), flush=True)
        while not stopping.wait(TICK_S):
            for server in servers:
                server.restart_if_dead()
            for child in children:
                _supervise(child)
    except ServerGaveUpError as e:
        print(f"club: {masked(str(e))}", file=sys.stderr, flush=True)
        code = 1
    finally:
        withdraw(settings.data_dir)
        _stop_all([child.proc for child in children if child.proc is not None])
        for server in reversed(servers):
            server.server.stop()
    print("club: stopped; data kept in", settings.data_dir)
    return code


def _stop_all(procs: list[subprocess.Popen[bytes]]) -> None:
    """Every role is asked to stop at once, then each is waited for: a stop costs
    the slowest role's shutdown, not the sum of them all. Asked once: a second
    SIGTERM would land in a role already closing its event loop."""
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs:
        wait_or_kill(proc)


def _nats_urls(settings: Settings, servers: list[WatchedServer]) -> dict[str, str]:
    """Each role's broker URL: its own user on the embedded server; CLUB_NATS_URL
    (which may carry user:password) for every role when a broker is given."""
    users = role_users(bootstrap.CONSUMERS)
    if settings.nats_url is not None:
        return {user.name: settings.nats_url for user in users}
    nats = EmbeddedNats(settings.data_dir / "nats", users=users)
    servers.append(WatchedServer("NATS", nats, _say))
    try:
        nats.start()
    except CredentialsFileError as e:
        raise ConfigError(str(e)) from None
    return {user.name: nats.url_for(user.name) for user in users}


def _say(line: str) -> None:
    print(f"club: {masked(line)}", flush=True)


def _spawn(child: Child) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "entrypoints.cli", *child.role.argv]
    return spawn_role(argv, child.env, as_nobody=child.as_nobody)


def _supervise(child: Child) -> None:
    """Restart a crashed role after a pause that grows with each crash."""
    now = time.monotonic()
    if child.restart_at is not None:
        if now >= child.restart_at:
            child.restart_at = None
            child.restarts += 1
            child.proc = _spawn(child)
            child.started_at = now
        return
    if child.proc is None or child.proc.poll() is None:
        return
    if now - child.started_at > STABLE_S:
        child.restarts = 0  # yesterday's crashes do not lengthen today's pause
    delay = RESTART_BACKOFF.delay(child.restarts + 1)
    name = " ".join(child.role.argv)
    _say(f"{name} exited ({child.proc.returncode}); restarting in {delay:.1f}s")
    child.restart_at = now + delay


def _announce(
    settings: Settings,
    database_url: str,
    nats_url: str,
    servers: list[WatchedServer],
    user: RolesUser,
) -> None:
    base = f"http://{settings.http_host}:{settings.http_port}"
    notes = "".join(f"  {note}\n" for server in servers for note in server.notes())
    if user.note:
        notes += f"  roles          {user.note}\n"
    print(
        "\nClub is up. Ctrl-C stops everything; data stays in "
        f"{settings.data_dir}\n"
        f"  API            {base}  (docs: {base}/docs)\n"
        f"  database       {masked(database_url)}\n"
        f"  NATS           {masked(nats_url)}\n"
        f"  operator token {settings.operator_token}\n"
        f"  a caller's token: club token --sub ann --role student  "
        "(roles: student, teacher, admin; send it as Authorization: Bearer …)\n"
        f"{notes}",
        flush=True,
    )
