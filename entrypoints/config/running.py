"""Where a running `club up` can be reached, for the operator's commands beside it.

`club up` writes its servers' addresses (with the admin's credentials) into
CLUB_DATA_DIR/running.json, mode 600, and removes it when it stops; `club status`,
`trace`, `dlq`, `audit`, `projections rebuild` and `relay rewind` read it when
CLUB_DATABASE_URL and CLUB_NATS_URL are unset. Roles never do: each has its own
broker user, handed to it by `club up`. Nor does `club demo`: a client of the API,
it finds it at CLUB_HTTP_HOST and CLUB_HTTP_PORT.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import attrs

from adapters.embedded.credentials import write_private

RUNNING_FILE = "running.json"


@attrs.frozen(kw_only=True)
class Running:
    database_url: str
    nats_url: str  # the admin user's
    pid: int  # the supervisor's: a file it left behind when killed is ignored


def announce(data_dir: Path, running: Running) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    write_private(data_dir / RUNNING_FILE, json.dumps(attrs.asdict(running)) + "\n")


def withdraw(data_dir: Path) -> None:
    (data_dir / RUNNING_FILE).unlink(missing_ok=True)


def running_beside(data_dir: Path) -> Running | None:
    """The `club up` running on this data directory, if any (its process alive)."""
    try:
        found = json.loads((data_dir / RUNNING_FILE).read_text())
        running = Running(
            database_url=str(found["database_url"]),
            nats_url=str(found["nats_url"]),
            pid=int(found["pid"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    with contextlib.suppress(PermissionError):  # alive, another user's
        try:
            os.kill(running.pid, 0)
        except ProcessLookupError:
            return None
    return running
