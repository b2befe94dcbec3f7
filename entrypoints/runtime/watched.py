"""An embedded server under `club up`: restarted when it dies, given up on when it
keeps dying, so that `club up` never serves on top of a dead database or broker."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import psycopg

RESTARTS_PER_WINDOW = 3
WINDOW_S = 60.0


class ServerGaveUpError(Exception):
    """An embedded server died too often; `club up` ends with this message."""


class Server(Protocol):
    @property
    def log(self) -> Path: ...
    def exit_code(self) -> int | None: ...
    def start(self) -> str: ...
    def stop(self) -> None: ...
    def notes(self) -> list[str]: ...


class WatchedServer:
    def __init__(self, name: str, server: Server, say: Callable[[str], None]) -> None:
        self.name = name
        self.say = say  # the supervisor's terminal
        self.server = server
        self._restarted_at: list[float] = []  # monotonic, within the last window

    def notes(self) -> list[str]:
        return self.server.notes()

    def restart_if_dead(self) -> None:
        code = self.server.exit_code()
        if code is None:
            return
        now = time.monotonic()
        self._restarted_at = [t for t in self._restarted_at if now - t < WINDOW_S]
        if len(self._restarted_at) >= RESTARTS_PER_WINDOW:
            msg = (
                f"the embedded {self.name} died {RESTARTS_PER_WINDOW + 1} times "
                f"within {WINDOW_S:.0f}s (last exit code {code}); its log is "
                f"{self.server.log}. "
                "Club stopped; `make run` starts it again, with its data."
            )
            raise ServerGaveUpError(msg)
        self._restarted_at.append(now)
        self.say(f"the embedded {self.name} exited ({code}); restarting it")
        try:
            self.server.start()
        except (RuntimeError, OSError, psycopg.Error) as e:
            # Counted: the next check finds it dead again and tries once more.
            self.say(f"the embedded {self.name} did not start: {e}")
        else:
            self.say(f"the embedded {self.name} is back")
