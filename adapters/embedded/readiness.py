"""Wait until a server just started answers its readiness check."""

from __future__ import annotations

import time
from http import HTTPStatus

import httpx


def wait_ready(base: str, timeout: float = 30, path: str = "/readyz") -> None:
    """Poll `base + path` until it answers 200; a process still starting refuses
    connections, which is a reason to wait, not to fail."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}{path}", timeout=1).status_code == HTTPStatus.OK:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    msg = f"{base}{path} not ready within {timeout}s"
    raise TimeoutError(msg)
