"""The event loop Club's roles run on: uvloop where it is installed (everywhere
but Windows, as the dependency says), as uvicorn picks for `club api`. A relay or
a consumer at a trickle pays the loop's own work — a wake-up, a socket read, a
callback — once or twice per event; uvloop does it in C
(docs/decisions/2026-12-07-the-roles-run-on-uvloop.md)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

_NewLoop = Callable[[], asyncio.AbstractEventLoop]
T = TypeVar("T")

if sys.platform == "win32":  # no uvloop there: asyncio's own loop
    _NEW_LOOP: _NewLoop | None = None
else:  # a dependency everywhere else (pyproject.toml)
    import uvloop

    _NEW_LOOP = uvloop.new_event_loop


def run_on_role_loop(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)`, on the roles' loop."""
    with asyncio.Runner(loop_factory=_NEW_LOOP) as runner:
        return runner.run(main)
