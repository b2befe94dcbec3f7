"""The roles as real processes that tests can start, kill and restart one by one."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from adapters.embedded.process import free_port
from adapters.embedded.readiness import wait_ready
from adapters.embedded.scratch import scratch_dir
from entrypoints.config.role_env import role_env
from tests.identity import TEST_AUTH_SECRET

ROLES: dict[str, tuple[str, ...]] = {
    "api": ("api",),
    "relay": ("relay",),
    "projector": ("projector", "statistics"),
    "rosters": ("projector", "rosters"),
    "worker": ("worker", "notifications"),
    "saga": ("saga",),
    "payment": ("sandbox", "payment"),
}
CORE = ("api", "relay", "projector", "rosters")  # what start_all starts
# Faults must resolve in seconds, not in production's tens of seconds.
FAST_FAULTS = {
    "CLUB_ACK_WAIT_SECONDS": "2",
    "CLUB_RELAY_LEASE_SECONDS": "2",
}
# The saga's waits in seconds, not minutes: faults resolve within a test.
FAST_SAGA = {
    "CLUB_SAGA_LEASE_SECONDS": "3",
    "CLUB_SAGA_POLL_SECONDS": "0.1",
    "CLUB_SAGA_WEBHOOK_GRACE_SECONDS": "2",
    "CLUB_SAGA_FIRST_CHECK_SECONDS": "0.3",
    "CLUB_SAGA_MAX_CHECK_DELAY_SECONDS": "1",
    "CLUB_SAGA_MAX_CHECKS": "30",
    "CLUB_SAGA_FIRST_RETRY_SECONDS": "0.3",
    "CLUB_SAGA_MAX_RETRY_DELAY_SECONDS": "1",
    "CLUB_SAGA_MAX_REFUND_ATTEMPTS": "100",
    "CLUB_SAGA_OFFER_WINDOW_SECONDS": "0",
}
WEBHOOK_SECRET = "whsec_stack_0123456789"  # noqa: S105 - a test secret


def club_env(database_url: str, nats_url: str, **extra: str) -> dict[str, str]:
    """A role's environment: this machine's, less its CLUB_* settings; the e-mail
    sandbox on a port of its own, so that tests running at once never share one."""
    ours = {
        "CLUB_EMAIL_PROVIDER_URL": f"http://127.0.0.1:{free_port()}",
        "CLUB_PAYMENT_PROVIDER_URL": f"http://127.0.0.1:{free_port()}",
        "CLUB_PAYMENT_WEBHOOK_SECRET": WEBHOOK_SECRET,
        "CLUB_AUTH_SECRET": TEST_AUTH_SECRET,
        # The tests' clients are load generators, one caller polling in a loop:
        # the rate limit has tests of its own (tests/integration/test_callers.py).
        "CLUB_RATE_LIMIT": "100000/second",
    }
    return role_env(database_url, nats_url, **(ours | extra))


class Stack:
    def __init__(
        self, database_url: str, nats_url: str, log_dir: Path, **env: str
    ) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        # The sandboxes keep their state here, never in the checkout's .club/.
        data = {"CLUB_DATA_DIR": str(log_dir / "data")}
        self.env = club_env(
            database_url, nats_url, CLUB_HTTP_PORT=str(self.port), **(data | env)
        )
        self.log_dir = log_dir
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.logs: dict[str, Path] = {}
        self._count = 0

    def start(self, name: str, *, role: str | None = None, **env: str) -> None:
        """Start a process of `role` (default: `name`) under the key `name`."""
        self._count += 1
        self.logs[name] = self.log_dir / f"{name}-{self._count}.log"
        log = self.logs[name].open("wb")
        self.procs[name] = subprocess.Popen(
            [sys.executable, "-m", "entrypoints.cli", *ROLES[role or name]],
            env=self.env | env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        if (role or name) == "api":
            wait_ready(self.base)
        if (role or name) == "payment":
            wait_ready(self.payment_url)

    @property
    def payment_url(self) -> str:
        return self.env["CLUB_PAYMENT_PROVIDER_URL"]

    def start_all(self) -> None:
        for name in CORE:
            self.start(name)

    def name_of(self, pid: int) -> str:
        return next(name for name, proc in self.procs.items() if proc.pid == pid)

    def stop(self, name: str) -> None:
        proc = self.procs.pop(name)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def kill(self, name: str) -> None:
        proc = self.procs.pop(name)
        proc.kill()
        proc.wait()

    def died(self, name: str, timeout: float = 20) -> int:
        """Wait for a process that is meant to kill itself; returns its exit code."""
        proc = self.procs.pop(name)
        return proc.wait(timeout)

    def restart(self, name: str, **env: str) -> None:
        if name in self.procs:
            self.stop(name)
        self.start(name, **env)

    def stop_all(self) -> None:
        for name in list(self.procs):
            self.stop(name)


def scratch_for(request: pytest.FixtureRequest, what: str) -> Path:
    """A scratch folder named after the test module, so that its logs are found."""
    module = request.module.__name__.rsplit(".", 1)[-1]
    return scratch_dir(f"club-{module}-{what}-")


@contextmanager
def running_stack(
    migrated: tuple[str, str], log_dir: Path, roles: Iterable[str] = CORE, **env: str
) -> Iterator[Stack]:
    """A stack on the module's servers with `roles` started, all stopped at the end."""
    stack = Stack(*migrated, log_dir, **env)
    try:
        for role in roles:
            stack.start(role)
        yield stack
    finally:
        stack.stop_all()


def eventually(
    check: Callable[[], Any], timeout: float = 20, interval: float = 0.1
) -> Any:
    """Poll until `check()` returns a truthy value; fail with the last value."""
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s; last: {value!r}")
