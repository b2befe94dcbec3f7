"""A person's work by state, read from PostgreSQL (application/ports.py:WorkLists).

Notifications have their own table (one indexed query per list). Purchases and
exports live only in the event store: each history's last event says which
histories may be in a state (application/work_history.py:last_events_of), and only
those are read and folded. A purchase settled for good (confirmed, refunded, moved
to another lesson) ends with an event no listed state can end with, so it is never
folded; an export is folded only for the page shown and the oldest of each state.
A history with an event this version cannot decode is left out (and logged), as
the relay and `club status` treat such an event: the lists still answer.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any
from uuid import UUID

import sqlalchemy as sa
import structlog
from eventsourcing.persistence import ApplicationRecorder, Mapper, StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder
from eventsourcing.utils import get_topic
from sqlalchemy.dialects.postgresql import distinct_on

from adapters.postgres.tables import notifications
from application.work_history import (
    EXPORT_SETS,
    PURCHASE_MAY_KEEP,
    PURCHASE_SETS,
    export_item,
    last_events_of,
    purchase_item,
)
from application.work_lists import (
    EXPORTS,
    NOTIFICATIONS,
    PURCHASES,
    WATCHED,
    WorkItem,
    WorkPage,
    WorkTally,
    check_limit,
    check_state,
    page_of,
    tallies_of,
)

log = structlog.get_logger()

_PURCHASE_TOPICS = [get_topic(c) for c in (*PURCHASE_SETS, *PURCHASE_MAY_KEEP)]
_EXPORT_TOPICS = [get_topic(c) for c in EXPORT_SETS]


class PostgresWorkLists:
    def __init__(
        self, engine: sa.Engine, recorder: ApplicationRecorder, mapper: Mapper[Any]
    ) -> None:
        if not isinstance(recorder, PostgresApplicationRecorder):
            msg = "the work lists read the PostgreSQL event store"
            raise TypeError(msg)
        self._engine = engine
        self._mapper = mapper
        self._events = sa.table(
            recorder.events_table_name,
            sa.column("notification_id", sa.BigInteger),
            sa.column("originator_id", sa.Uuid),
            sa.column("originator_version", sa.BigInteger),
            sa.column("topic", sa.Text),
            sa.column("state", sa.LargeBinary),
            schema=recorder.datastore.schema or "public",
        )

    def page(self, kind: str, state: str, *, limit: int, offset: int = 0) -> WorkPage:
        check_state(kind, state)
        check_limit(limit)
        if offset < 0:
            raise ValueError(f"the offset must be 0 or more, not {offset}")
        if kind == NOTIFICATIONS:
            return self._notifications(state, limit, offset)
        if kind == EXPORTS:
            return self._exports(state, limit, offset)
        items = self._folded(PURCHASES, [state])
        return page_of(PURCHASES, state, items, limit=limit, offset=offset)

    def tallies(self) -> list[WorkTally]:
        return [
            *tallies_of(PURCHASES, self._folded(PURCHASES, WATCHED[PURCHASES])),
            *self._notification_tallies(),
            *(self._export_tally(state) for state in WATCHED[EXPORTS]),
        ]

    # -- notifications: their own table ----------------------------------------

    def _notifications(self, state: str, limit: int, offset: int) -> WorkPage:
        n = notifications.c
        with self._engine.connect() as conn:
            total = conn.execute(
                sa.select(sa.func.count()).where(n.state == state)
            ).scalar_one()
            rows = conn.execute(
                sa.select(notifications)
                .where(n.state == state)
                .order_by(n.updated_at, n.event_id)
                .offset(offset)
                .limit(limit)
            ).all()
        items = [
            WorkItem(
                id=row.event_id,
                state=row.state,
                since=row.updated_at,
                reason=row.last_error,
                detail={
                    "kind": row.kind,
                    "enrollment_id": str(row.enrollment_id),
                    "student_id": row.student_id,
                    "attempts": str(row.attempts),
                },
            )
            for row in rows
        ]
        return WorkPage(
            kind=NOTIFICATIONS, state=state, items=items, total=total, offset=offset
        )

    def _notification_tallies(self) -> list[WorkTally]:
        n = notifications.c
        watched = WATCHED[NOTIFICATIONS]
        with self._engine.connect() as conn:
            rows = conn.execute(
                sa.select(n.state, sa.func.count(), sa.func.min(n.updated_at))
                .where(n.state.in_(watched))
                .group_by(n.state)
            ).all()
        found = {row[0]: (int(row[1]), row[2]) for row in rows}
        return [
            WorkTally(
                kind=NOTIFICATIONS,
                state=state,
                count=found.get(state, (0, None))[0],
                oldest_since=found.get(state, (0, None))[1],
            )
            for state in watched
        ]

    # -- exports: an exact status from the last event --------------------------

    def _exports(self, state: str, limit: int, offset: int) -> WorkPage:
        latest = self._latest(_EXPORT_TOPICS, last_events_of(EXPORTS, [state]))
        with self._engine.connect() as conn:
            total = conn.execute(sa.select(sa.func.count()).select_from(latest)).one()
            ids = conn.execute(
                sa.select(latest.c.originator_id)
                .order_by(latest.c.notification_id)
                .offset(offset)
                .limit(limit)
            ).scalars()
            histories = self._histories(conn, list(ids))
        items = sorted(
            (export_item(events) for events in histories.values()),
            key=lambda i: i.since,
        )
        return WorkPage(
            kind=EXPORTS, state=state, items=items, total=total[0], offset=offset
        )

    def _export_tally(self, state: str) -> WorkTally:
        """The count, and the oldest: the one whose last event came first."""
        page = self._exports(state, 1, 0)
        oldest = page.items[0].since if page.items else None
        return WorkTally(
            kind=EXPORTS, state=state, count=page.total, oldest_since=oldest
        )

    # -- the event store -------------------------------------------------------

    def _folded(self, kind: str, states: Sequence[str]) -> list[WorkItem]:
        latest = self._latest(_PURCHASE_TOPICS, last_events_of(kind, states))
        with self._engine.connect() as conn:
            ids = conn.execute(sa.select(latest.c.originator_id)).scalars()
            histories = self._histories(conn, list(ids))
        return [purchase_item(events) for events in histories.values()]

    def _latest(self, topics: list[str], last: Iterable[type[Any]]) -> sa.Subquery:
        """Each aggregate of `topics` whose history ends with one of `last`."""
        e = self._events.c
        ends = (
            sa.select(e.originator_id, e.topic, e.notification_id)
            .ext(distinct_on(e.originator_id))
            .where(e.topic.in_(topics))
            .order_by(e.originator_id, e.originator_version.desc())
        )
        subquery = ends.subquery("ends")
        wanted = [get_topic(c) for c in last]
        return (
            sa.select(subquery).where(subquery.c.topic.in_(wanted)).subquery("latest")
        )

    def _histories(self, conn: sa.Connection, ids: list[UUID]) -> dict[UUID, list[Any]]:
        """Each aggregate's domain events, in version order."""
        if not ids:
            return {}
        e = self._events.c
        rows = conn.execute(
            sa.select(e.originator_id, e.originator_version, e.topic, e.state)
            .where(e.originator_id.in_(ids))
            .order_by(e.originator_id, e.originator_version)
        ).all()
        histories: dict[UUID, list[Any]] = defaultdict(list)
        unreadable: set[UUID] = set()
        for row in rows:
            stored = StoredEvent(
                originator_id=row.originator_id,
                originator_version=int(row.originator_version),
                topic=str(row.topic),
                state=bytes(row.state),
            )
            try:
                event = self._mapper.to_domain_event(stored)
            except Exception:  # our own stored data, as the relay treats it: skip it
                unreadable.add(row.originator_id)
                continue
            histories[row.originator_id].append(event)
        for aggregate_id in unreadable:  # a part of a history would mislead
            log.warning("work_lists.unreadable_history", aggregate_id=str(aggregate_id))
            histories.pop(aggregate_id, None)
        return histories
