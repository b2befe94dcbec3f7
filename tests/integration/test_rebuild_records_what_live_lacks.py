"""A rebuild records in its shadow inbox only the events the live inbox lacks, and
after the switch every event is still applied exactly once, whoever applied it."""

from __future__ import annotations

from uuid import UUID

from adapters.postgres.inbox import Delivery, apply_batch
from application.contracts.envelope import Envelope
from application.contracts.mapping import decode
from application.contracts.meaning import meaning_digest
from projections import statistics
from tests.integration.helpers import lesson_with_enrollments, published
from tests.integration.test_rebuild_never_stops import (
    confirmed,
    rebuild_of_statistics,
)


def deliver(container, envelopes: list[Envelope]) -> tuple[int, int]:
    """The live consumer's path: (applied, duplicates)."""
    batch = [Delivery(e, meaning_digest(e), seq) for seq, e in enumerate(envelopes, 1)]
    with container.engine.begin() as conn:
        outcome = apply_batch(conn, statistics.NAME, batch, statistics.apply)
    return outcome.applied, outcome.duplicates


def recorded(container, ids: set[UUID], schema: str | None = None) -> set[UUID]:
    """Of `ids`, those with a row in the inbox of `schema` (None: the live one)."""
    table = f'"{schema}".inbox' if schema else "inbox"
    with container.engine.connect() as conn:
        rows = conn.exec_driver_sql(
            f"SELECT event_id FROM {table} "
            "WHERE consumer = %(consumer)s AND event_id = ANY(%(ids)s)",
            {"consumer": statistics.NAME, "ids": list(ids)},
        ).scalars()
        return set(rows) & ids


def test_the_shadow_inbox_holds_only_what_the_live_one_lacks_and_none_doubles(
    container,
) -> None:
    lesson = lesson_with_enrollments(container, 6)
    mine = [
        e
        for e in published(container)
        if getattr(decode(e), "lesson_id", None) == lesson
    ]
    assert len(mine) == 7  # the lesson scheduled, six enrollments
    live, left = mine[::2], mine[1::2]
    assert deliver(container, live) == (len(live), 0)
    ids = {e.event_id for e in mine}

    shadow = rebuild_of_statistics(container)
    shadow.build_shadow()
    assert recorded(container, ids, shadow.shadow) == {e.event_id for e in left}

    rebuild_of_statistics(container).run()
    assert recorded(container, ids) == ids
    assert confirmed(container, lesson) == 6
    # Every event again, as a rewind would redeliver them: none applies twice.
    assert deliver(container, mine) == (0, len(mine))
    assert confirmed(container, lesson) == 6
