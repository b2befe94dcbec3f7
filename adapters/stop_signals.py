"""Ctrl-C and SIGTERM as an asyncio event, for a process's main coroutine."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterator

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def stop_on_signals() -> Iterator[asyncio.Event]:
    """An event set by the first SIGINT or SIGTERM, its handlers removed on the way
    out. Removed here, inside the running loop, because `asyncio.run` closing the
    loop closes its wake-up socket *before* it removes them: a signal in that gap
    is written to a closed descriptor, and Python prints "Exception ignored when
    trying to write to the signal wakeup fd" to stderr."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, stop.set)
    try:
        yield stop
    finally:
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)
