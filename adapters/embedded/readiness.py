"""Wait until a server just started answers its readiness check."""

from __future__ import annotations

import subprocess
import time
from http import HTTPStatus

import httpx


def wait_ready(
    base: str,
    timeout: float = 30,
    path: str = "/readyz",
    process: subprocess.Popen[bytes] | None = None,
) -> None:
    """Poll `base + path` until it answers 200; a process still starting refuses
    connections, which is a reason to wait, not to fail. When the `process` that
    should answer has exited, waiting longer cannot help: say so at once."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            code = process.returncode
            msg = f"{process.args!r} exited with {code} before {base} was ready"
            raise RuntimeError(msg)
        try:
            if httpx.get(f"{base}{path}", timeout=1).status_code == HTTPStatus.OK:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    msg = f"{base}{path} not ready within {timeout}s"
    raise TimeoutError(msg)
