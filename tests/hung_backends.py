"""PostgreSQL backends stopped with SIGSTOP: the server accepts a client's bytes
and never answers, as a stuck pooler or a frozen VM would; new connections, served
by new backends, still work. Each backend is stopped only while idle (outside a
transaction), so it holds no lock that would stall the fresh connections too."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterator

import psycopg

STOP_WITHIN_S = 10.0  # every backend found idle and stopped, or the test fails


def backend_pids(database_url: str, where: str, *args: object) -> list[int]:
    with psycopg.connect(database_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend'"
            f" AND pid <> pg_backend_pid() AND {where}",
            args,
        ).fetchall()
    return [pid for (pid,) in rows]


def _idle(database_url: str, pid: int) -> bool:
    """A stopped backend runs nothing, so its reported state is final."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT state FROM pg_stat_activity WHERE pid = %s", (pid,)
        ).fetchone()
    return row is not None and row[0] == "idle"


@contextlib.contextmanager
def stopped(
    database_url: str, pids: Callable[[], list[int]], *, at_least: int = 1
) -> Iterator[list[int]]:
    """Stop every backend `pids()` names (SIGSTOP), each while idle; resumed
    (SIGCONT) at the end whatever happens."""
    held: list[int] = []
    try:
        deadline = time.monotonic() + STOP_WITHIN_S
        while True:
            for pid in set(pids()) - set(held):
                os.kill(pid, signal.SIGSTOP)
                if _idle(database_url, pid):
                    held.append(pid)
                else:  # inside a transaction: let it finish, try again
                    os.kill(pid, signal.SIGCONT)
            if len(held) >= at_least and not set(pids()) - set(held):
                break
            assert time.monotonic() < deadline, f"stopped {held} of {pids()}"
            time.sleep(0.05)  # a backend in a transaction ends it in ms
        yield held
    finally:
        for pid in held:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def of_application(database_url: str, name: str) -> Callable[[], list[int]]:
    """The backends serving one process started with `PGAPPNAME=name` (libpq
    gives every connection it makes that application_name)."""
    return lambda: backend_pids(database_url, "application_name = %s", name)
