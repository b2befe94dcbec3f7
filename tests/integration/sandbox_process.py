"""The e-mail sandbox as a real process that tests can start, SIGKILL and restart."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import httpx

from adapters.embedded.process import free_port
from entrypoints.sandbox.email_provider import EMAIL_KNOBS
from tests.stack import wait_ready

DEFAULT_KNOBS = {knob.name: knob.default for knob in EMAIL_KNOBS}


class SandboxProcess:
    def __init__(self, data_dir: Path, *knob_args: str) -> None:
        self.data_dir = data_dir
        self.knob_args = knob_args
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = data_dir.parent / f"{data_dir.name}.log"

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "entrypoints.sandbox.email",
                 "--port", str(self.port), "--data-dir", str(self.data_dir),
                 *self.knob_args],
                stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        wait_ready(self.url, timeout=30)

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
        self.set_knobs(**DEFAULT_KNOBS)
