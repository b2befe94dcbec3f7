"""The API under each HTTP server and loop, and with 1 or 2 processes (issue #14).

Every variant serves the same app, `entrypoints.runtime.asgi:create_app` (what
`CLUB_API_WORKERS` runs), from a process of its own on the bench's servers; only the
server, the loop, the HTTP parser and the process count differ. A variant whose
package is not installed is reported as missing, never silently dropped.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import attrs

from adapters.embedded.process import free_port
from adapters.embedded.readiness import wait_ready
from bench.callers import AUTH_ENV
from entrypoints.runtime.api_workers import api_workers

APP = "entrypoints.runtime.asgi:create_app"
# Longer than a start needs on a quiet machine: on two cores shared with other
# test runs an API's start has taken more than a minute.
READY_WITHIN_S = 180
PEER = "bench.peer_plain:create_app"
OUTBOX_PEER = "bench.peer_outbox:create_app"


@attrs.frozen
class HttpStack:
    name: str
    needs: tuple[str, ...]  # modules that must be importable; the first is the server
    flags: tuple[str, ...]

    def missing(self) -> list[str]:
        return [m for m in self.needs if importlib.util.find_spec(m) is None]

    def command(self, app: str, port: int, workers: int) -> list[str]:
        where = ("--host", "127.0.0.1", "--port", str(port), "--workers", str(workers))
        return [sys.executable, "-m", self.needs[0], *self.flags, *where, app]


STACKS = (
    HttpStack("uvicorn, asyncio + h11", ("uvicorn",),
              ("--factory", "--no-access-log", "--loop", "asyncio", "--http", "h11")),
    HttpStack("uvicorn[standard], uvloop + httptools",
              ("uvicorn", "uvloop", "httptools"),
              ("--factory", "--no-access-log", "--loop", "uvloop",
               "--http", "httptools")),
    HttpStack("granian (asgi)", ("granian",),
              ("--interface", "asgi", "--factory", "--no-log")),
)  # fmt: skip
# What `club api` runs: uvicorn's defaults pick uvloop and httptools when installed.
SHIPPED = HttpStack("club api (uvicorn defaults)", ("uvicorn",),
                    ("--factory", "--no-access-log"))  # fmt: skip


def api_env(database_url: str, nats_url: str) -> dict[str, str]:
    """This machine's environment less its CLUB_* settings, plus the servers' and
    the bench's CLUB_AUTH_SECRET (the API verifies every caller's token)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLUB_")}
    servers = {"CLUB_DATABASE_URL": database_url, "CLUB_NATS_URL": nats_url}
    return env | servers | AUTH_ENV


@contextmanager
def api_process(
    stack: HttpStack,
    database_url: str,
    nats_url: str,
    workers: int = 1,
    *,
    app: str = APP,
) -> Iterator[str]:
    """`app` under `stack` with `workers` processes; yields its base URL.
    A peer (bench.peer_plain, bench.peer_outbox) finds its database in
    PEER_DATABASE_URL."""
    api_workers({"CLUB_API_WORKERS": str(workers)})  # the same bounds as club api
    port = free_port()
    env = api_env(database_url, nats_url) | {"PEER_DATABASE_URL": database_url}
    # What it says goes to a file, shown only if it fails to start.
    with tempfile.TemporaryFile() as said:
        proc = subprocess.Popen(
            stack.command(app, port, workers),
            env=env,
            stdout=subprocess.DEVNULL, stderr=said,
        )  # fmt: skip
        try:
            base = f"http://127.0.0.1:{port}"
            try:
                wait_ready(base, READY_WITHIN_S, process=proc)
            except (RuntimeError, TimeoutError) as e:
                said.seek(0)
                tail = said.read().decode(errors="replace")[-2000:]
                raise RuntimeError(f"{e}; it said:\n{tail}") from e
            yield base
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
