"""`club up` gives up on an embedded server that keeps dying, with a message that
says where to look (issue #9, 8b); a server that dies once is started again."""

from __future__ import annotations

from pathlib import Path

import pytest

from entrypoints.runtime.watched import (
    RESTARTS_PER_WINDOW,
    ServerGaveUpError,
    WatchedServer,
)


class DyingServer:
    """Our server interface, dying right after each start (as a full disk would)."""

    def __init__(self) -> None:
        self.starts = 0
        self.log = Path("/d/postgres.log")

    def exit_code(self) -> int | None:
        return 1

    def start(self) -> str:
        self.starts += 1
        raise RuntimeError("postgres exited with 1")

    def stop(self) -> None:
        pass

    def notes(self) -> list[str]:
        return []


def test_a_server_that_keeps_dying_ends_club_up_with_its_log() -> None:
    said: list[str] = []
    server = DyingServer()
    watched = WatchedServer("PostgreSQL", server, said.append)
    for _ in range(RESTARTS_PER_WINDOW):
        watched.restart_if_dead()
    with pytest.raises(ServerGaveUpError, match=r"PostgreSQL died .*/d/postgres\.log"):
        watched.restart_if_dead()
    assert server.starts == RESTARTS_PER_WINDOW
    assert said[0] == "the embedded PostgreSQL exited (1); restarting it"
