"""Each role says it is alive: a beat every BEAT_INTERVAL_S from its own event loop
(the write off the loop's thread), its row removed when it stops cleanly. A beat
that fails is logged and tried again at the next one: a role never stops for it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import structlog

from adapters.postgres.role_beats import RoleBeats, instance_name
from application.console_reads import BEAT_INTERVAL_S
from entrypoints.config.catalogue import Role

log = structlog.get_logger()

STOP_WAIT_S = 5.0  # a beat still writing at the stop is given this long


@contextlib.asynccontextmanager
async def heartbeat(
    beats: RoleBeats, role: Role, interval: float = BEAT_INTERVAL_S
) -> AsyncIterator[None]:
    """Beat while the block runs, as one instance (host:pid:random)."""
    instance = instance_name()
    stop = asyncio.Event()
    task = asyncio.create_task(_beat_until(stop, beats, instance, role, interval))
    try:
        yield
    finally:
        stop.set()  # the beat under way finishes: none lands after the forget
        try:
            await asyncio.wait_for(task, STOP_WAIT_S)
        except TimeoutError:
            log.warning("role.beat_stuck_at_stop", instance=instance)
        try:
            await asyncio.to_thread(beats.forget, instance)
        except Exception:  # the row ages out of the live list instead
            log.warning("role.forget_failed", instance=instance, exc_info=True)


async def _beat_until(
    stop: asyncio.Event, beats: RoleBeats, instance: str, role: Role, interval: float
) -> None:
    try:
        await asyncio.to_thread(beats.forget_silent)
    except Exception:  # housekeeping only
        log.warning("role.beat_housekeeping_failed", exc_info=True)
    failing = False
    while not stop.is_set():
        try:
            await asyncio.to_thread(beats.beat, instance, role.kind, role.name)
        except Exception as e:  # never fatal: the role works on, and beats again
            if not failing:
                log.warning("role.beat_failed", instance=instance, error=repr(e))
            failing = True
        else:
            if failing:
                log.info("role.beat_resumed", instance=instance)
            failing = False
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval)
