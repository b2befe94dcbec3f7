"""A role waiting for an unreachable broker at start-up still stops on SIGTERM, as it
does while waiting for the database (nats-py alone retries for ever)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from adapters.embedded.process import free_port
from tests.servers import scratch_dir
from tests.stack import club_env, eventually


@pytest.mark.parametrize("role", [("relay",), ("projector", "statistics")])
def test_sigterm_ends_the_wait_for_nats(
    database_url: str, role: tuple[str, ...]
) -> None:
    nobody_listens = f"nats://127.0.0.1:{free_port()}"
    log = scratch_dir("club-role-wait-") / "role.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "entrypoints.cli", *role],
            env=club_env(database_url, nobody_listens), stdout=out, stderr=out,
        )  # fmt: skip
    try:
        # A failed attempt is logged (its wording is the event loop's own).
        eventually(lambda: '"event": "nats.error"' in log.read_text(), timeout=30)
        asked = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0, log.read_text()
        assert time.monotonic() - asked < 3
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
