"""Roles that say they are alive, on real PostgreSQL: a fresh beat is live, one
older than the window is not, a clean stop's `forget` removes it at once, and the
chain's reads (`club status`, /ops) list the live ones."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from uuid import uuid4

import sqlalchemy as sa

from adapters.postgres.role_beats import RoleBeats, instance_name
from adapters.postgres.tables import role_beats
from application.console_reads import ALIVE_WITHIN_S
from entrypoints.config.catalogue import Role
from entrypoints.runtime.bootstrap import chain_counts
from entrypoints.runtime.heartbeat import heartbeat


def mine(beats: RoleBeats, instance: str) -> list:
    return [beat for beat in beats.alive() if beat.instance == instance]


def test_a_beat_is_live_a_stale_one_is_not_and_forget_removes_it(container):
    beats = RoleBeats(container.engine)
    instance, stale = instance_name(), instance_name()
    beats.beat(instance, "worker", "notifications")
    beats.beat(stale, "relay")
    with container.engine.begin() as conn:
        conn.execute(
            sa.update(role_beats)
            .where(role_beats.c.instance == stale)
            .values(beat_at=sa.func.now() - timedelta(seconds=ALIVE_WITHIN_S + 1))
        )

    [live] = mine(beats, instance)
    assert (live.kind, live.name) == ("worker", "notifications")
    assert 0 <= live.last_beat_seconds_ago < ALIVE_WITHIN_S
    assert live.pid > 0
    assert live.host
    assert mine(beats, stale) == []  # in the table, silent too long: not alive
    # The chain's reads see the same, through the console's port.
    seen = {beat.instance for beat in chain_counts(container).roles_alive()}
    assert instance in seen
    assert stale not in seen

    beats.beat(instance, "worker", "notifications")  # a beat again: still one row
    assert len(mine(beats, instance)) == 1
    beats.forget(instance)
    assert mine(beats, instance) == []


def test_a_killed_role_s_row_is_deleted_after_a_day(container):
    beats = RoleBeats(container.engine)
    old = f"gone:1:{uuid4().hex[:8]}"
    beats.beat(old, "saga")
    with container.engine.begin() as conn:
        conn.execute(
            sa.update(role_beats)
            .where(role_beats.c.instance == old)
            .values(beat_at=sa.func.now() - timedelta(days=2))
        )
    assert beats.forget_silent() >= 1
    with container.engine.connect() as conn:
        left = conn.execute(
            sa.select(sa.func.count()).where(role_beats.c.instance == old)
        ).scalar_one()
    assert left == 0


def test_the_heartbeat_beats_while_the_block_runs_and_forgets_at_the_end(container):
    beats = RoleBeats(container.engine)
    role = Role("worker", f"beat-{uuid4().hex[:6]}")

    def of_role() -> list:
        return [beat for beat in beats.alive() if beat.name == role.name]

    async def run() -> tuple[list, list]:
        async with heartbeat(beats, role, interval=0.1):
            await asyncio.sleep(0.35)
            during = await asyncio.to_thread(of_role)
        return during, await asyncio.to_thread(of_role)

    during, after = asyncio.run(run())
    assert [beat.kind for beat in during] == ["worker"]
    assert during[0].last_beat_seconds_ago < 1
    assert after == []


def test_a_failing_beat_is_never_fatal(container):
    class Failing(RoleBeats):
        calls = 0

        def beat(self, instance: str, kind: str, name: str = "") -> None:
            Failing.calls += 1
            raise ConnectionError("the database is away")

        def forget(self, instance: str) -> None:
            raise ConnectionError("still away")

    async def run() -> None:
        async with heartbeat(Failing(container.engine), Role("relay"), interval=0.05):
            await asyncio.sleep(0.3)

    asyncio.run(run())  # neither the failed beats nor the failed forget escape
    assert Failing.calls >= 3  # tried again at each beat
