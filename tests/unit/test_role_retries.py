"""A passing failure that escapes a role's loop is waited out, not fatal."""

from __future__ import annotations

import asyncio

import nats.errors

from entrypoints.runtime.roles import _run_until_stopped


class FlakyAtStart:
    """Its first start times out, as a durable made during a leader election does."""

    def __init__(self) -> None:
        self.starts = 0

    async def run(self, stop: asyncio.Event) -> None:
        self.starts += 1
        if self.starts == 1:
            raise nats.errors.TimeoutError
        stop.set()


def test_a_role_whose_start_times_out_starts_again() -> None:
    role = FlakyAtStart()
    asyncio.run(asyncio.wait_for(_run_until_stopped(role, asyncio.Event()), 10))
    assert role.starts == 2
