"""An ASGI app behind a real uvicorn server, in a thread of the test's process.

A test client (Starlette's, httpx's ASGI transport) waits for the app's call to
return before it hands over the answer; a real server sends each message as the
app sends it. Whatever answers before the app returns (the request deadline's
503) is tested here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from starlette.types import ASGIApp

from adapters.embedded.process import free_port

START_S = 30.0


@contextmanager
def serving(app: ASGIApp) -> Iterator[str]:
    """The server's base URL while it runs; stopped (gracefully) after."""
    port = free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning",
        timeout_graceful_shutdown=10,
    )  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="live-server", daemon=True)
    thread.start()
    started = time.monotonic()
    while not server.started:
        if not thread.is_alive() or time.monotonic() - started > START_S:
            msg = f"uvicorn did not start on port {port} within {START_S:g}s"
            raise RuntimeError(msg)
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(START_S)
