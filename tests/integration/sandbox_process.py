"""The e-mail sandbox as a real process that tests can start, SIGKILL and restart.

The payment sandbox is the same process with another module, knobs and listing
(`payment_sandbox_process.py`): the two differ only in those class attributes."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, Self

import httpx

from adapters.embedded.process import free_port
from sandboxes.email_knobs import EMAIL_KNOBS
from tests.stack import wait_ready

DEFAULT_KNOBS = {knob.name: knob.default for knob in EMAIL_KNOBS}


class SandboxProcess:
    module: ClassVar[str] = "sandboxes.email"
    default_knobs: ClassVar[dict[str, object]] = DEFAULT_KNOBS
    listing: ClassVar[str] = "messages"  # GET /<listing> shows what it accepted

    def __init__(self, data_dir: Path, *knob_args: str) -> None:
        self.data_dir = data_dir
        self.knob_args = knob_args
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = data_dir.parent / f"{data_dir.name}.log"

    def extra_args(self) -> list[str]:
        """Command-line arguments a subclass adds before the knobs."""
        return []

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", self.module,
                 "--port", str(self.port), "--data-dir", str(self.data_dir),
                 *self.extra_args(), *self.knob_args],
                stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        wait_ready(self.url, timeout=30)

    @contextmanager
    def running(self) -> Iterator[Self]:
        """Started here, stopped on the way out whatever the test did."""
        self.start()
        try:
            yield self
        finally:
            self.stop()

    def kill(self) -> None:
        """SIGKILL: nothing is flushed or closed on the way out."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()
        self.proc = None

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def set_knobs(self, **knobs: object) -> dict[str, object]:
        response = httpx.put(f"{self.url}/knobs", json=knobs, timeout=5)
        assert response.status_code == 200, response.text
        return dict(response.json())

    def reset_knobs(self) -> None:
        self.set_knobs(**self.default_knobs)

    @contextmanager
    def fresh_knobs(
        self, **first: object
    ) -> Iterator[Callable[..., dict[str, object]]]:
        """The defaults (then `first`) for one test, the defaults again after it."""
        self.reset_knobs()
        if first:
            self.set_knobs(**first)
        try:
            yield self.set_knobs
        finally:
            self.reset_knobs()

    def listed(self, **params: Any) -> dict[str, Any]:
        """One page of GET /<listing>: `total` and the page under the listing's name."""
        response = httpx.get(f"{self.url}/{self.listing}", params=params, timeout=10)
        assert response.status_code == 200, response.text
        return dict(response.json())

    def held(self, key: str) -> int:
        """How many of what the sandbox accepted carry the idempotency key `key`."""
        page = self.listed()[self.listing]
        return [item["idempotency_key"] for item in page].count(key)
