"""A role's stop signals: set the event, and leave nothing behind in the loop."""

from __future__ import annotations

import asyncio
import os
import signal

from adapters.stop_signals import stop_on_signals


def test_a_sigterm_sets_the_event_and_the_handlers_leave_before_the_loop_closes() -> (
    None
):
    async def main() -> tuple[int, object]:
        with stop_on_signals() as stop:
            os.kill(os.getpid(), signal.SIGTERM)
            await asyncio.wait_for(stop.wait(), timeout=5)
        # Still inside the running loop: its wake-up socket is open, and no
        # signal may be written to it once asyncio.run closes it.
        return signal.set_wakeup_fd(-1), signal.getsignal(signal.SIGTERM)

    wakeup_fd, handler = asyncio.run(main())
    assert wakeup_fd == -1
    assert handler == signal.SIG_DFL
