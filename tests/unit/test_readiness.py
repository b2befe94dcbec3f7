"""Waiting for a server: a process that already exited is reported at once."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from adapters.embedded.process import free_port
from adapters.embedded.readiness import wait_ready


def test_a_server_that_exited_is_reported_at_once_not_after_the_timeout() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    proc.wait(10)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="exited with 3"):
        wait_ready(f"http://127.0.0.1:{free_port()}", timeout=30, process=proc)
    assert time.monotonic() - start < 5


def test_nobody_answering_is_a_timeout_naming_the_address() -> None:
    base = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(TimeoutError, match=f"{base}/readyz not ready within 0.3s"):
        wait_ready(base, timeout=0.3)
