"""SIGKILL a relay or a projector at random moments while enrollments pour in."""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa

from adapters.postgres.tables import inbox
from tests.faults.killer import Killer
from tests.faults.workload import (
    Enroller,
    confirmed_totals,
    expected_event_ids,
    stream_event_ids,
)
from tests.stack import eventually

EVENTS = 300


@pytest.mark.parametrize("victim", ["relay", "projector"])
def test_random_sigkills_lose_nothing_and_double_nothing(
    stack, container, migrated, victim
) -> None:
    killer = Killer(stack, [victim], pause=(0.2, 0.8))
    killer.start()
    # Six seconds at least: kills every 0.2-0.8 s land while enrollments pour in
    # (300 took about 1.5 s on a fast machine: four kills, not five).
    workload = Enroller(stack.base, count=EVENTS, at_least_s=6.0)
    workload.start()
    workload.join(120)
    killer.stop.set()
    killer.join()
    assert workload.error is None
    assert workload.created == EVENTS
    assert killer.kills >= 5

    expected = expected_event_ids(container)
    assert len(expected) >= EVENTS
    eventually(lambda: stream_event_ids(migrated[1]) == expected, timeout=30)
    totals = eventually(
        lambda: (t := confirmed_totals(container))["projection"] == t["store"] and t,
        timeout=30,
    )
    time.sleep(0.5)  # nothing more may arrive: a double would show up now
    assert confirmed_totals(container) == totals
    published = stream_event_ids(migrated[1])
    assert len(published) == len(set(published)) == len(expected)
    with container.engine.connect() as conn:
        rows = conn.execute(
            sa.select(sa.func.count())
            .select_from(inbox)
            .where(inbox.c.consumer == "statistics")
        ).scalar_one()
    assert rows == len(expected)
