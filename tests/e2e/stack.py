"""The roles as real processes, as `club up` or docker-compose would run them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from adapters.embedded.process import free_port

ROLES = (("api",), ("relay",), ("projector", "statistics"))


def club_env(database_url: str, nats_url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLUB_")}
    return env | {"CLUB_DATABASE_URL": database_url, "CLUB_NATS_URL": nats_url} | extra


@contextmanager
def running_stack(database_url: str, nats_url: str, log_dir: Path) -> Iterator[str]:
    port = free_port()
    env = club_env(database_url, nats_url, CLUB_HTTP_PORT=str(port))
    procs = []
    try:
        for role in ROLES:
            log = (log_dir / f"{'-'.join(role)}.log").open("wb")
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "entrypoints.cli", *role],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
        base = f"http://127.0.0.1:{port}"
        wait_ready(base)
        yield base
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


def wait_ready(base: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{base} not ready within {timeout}s")


def eventually(check, timeout: float = 15, interval: float = 0.1):
    """Poll until `check()` returns a truthy value; fail with the last value."""
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s; last: {value!r}")
