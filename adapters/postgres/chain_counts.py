"""What PostgreSQL knows of the chain: the outbox, notification states, rates, sizes.

Each number comes with the age of the oldest item it counts (docs/background.md §33:
length
without age deceives). Every read is one short query, safe at each /metrics scrape.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from eventsourcing.persistence import ApplicationRecorder, Mapper
from eventsourcing.postgres import PostgresApplicationRecorder

from adapters.postgres.lease import RELAY_LEASE
from adapters.postgres.role_beats import RoleBeats
from adapters.postgres.tables import (
    consumer_positions,
    inbox,
    inbox_horizons,
    notifications,
    relay_leases,
    request_answers,
)
from application.console_reads import (
    ALIVE_WITHIN_S,
    RATE_WINDOW_S,
    DeadlinesHop,
    OutboxHop,
    Rates,
    RoleBeat,
    StateCount,
)

ENROLLMENT_TOPICS = "domain.enrollment:%"  # the events that ask for an e-mail
EXACT_UP_TO = 100_000  # rows counted exactly; a larger table shows an estimate


class PostgresStatus:
    """The chain's counts (application/console_reads.py:ChainCounts)."""

    def __init__(
        self,
        engine: sa.Engine,
        recorder: ApplicationRecorder,
        mapper: Mapper[UUID],
        *,
        relay_name: str = RELAY_LEASE,
    ) -> None:
        if not isinstance(recorder, PostgresApplicationRecorder):
            msg = "the chain's status reads the PostgreSQL event store"
            raise TypeError(msg)
        self._engine = engine
        self._recorder = recorder
        self._mapper = mapper
        self._relay_name = relay_name
        schema = recorder.datastore.schema or "public"
        self._events = sa.table(
            recorder.events_table_name,
            sa.column("notification_id", sa.BigInteger),
            sa.column("topic", sa.Text),
            schema=schema,
        )

    def outbox(self) -> OutboxHop:
        """Stored but not yet published: every notification after the relay's
        position, and the stored time of the first of them."""
        position = self._relay_position()
        with self._engine.connect() as conn:
            waiting = int(
                conn.execute(
                    sa.select(sa.func.count()).where(
                        self._events.c.notification_id > position
                    )
                ).scalar_one()
            )
        age = self._age_of_first_after(position) if waiting else None
        return OutboxHop(position=position, unpublished=waiting, oldest_age_seconds=age)

    def outbox_age(self) -> float | None:
        """The oldest unpublished notification's age alone: two index lookups,
        where `outbox`'s count reads every unpublished row (a backlog's worth while
        the relay is down), too much for a sample taken every few seconds."""
        return self._age_of_first_after(self._relay_position())

    def _relay_position(self) -> int:
        with self._engine.connect() as conn:
            return int(
                conn.execute(
                    sa.select(relay_leases.c.position).where(
                        relay_leases.c.name == self._relay_name
                    )
                ).scalar()
                or 0
            )

    def notification_states(self) -> list[StateCount]:
        age = sa.func.extract(
            "epoch", sa.func.now() - sa.func.min(notifications.c.created_at)
        )
        with self._engine.connect() as conn:
            rows = conn.execute(
                sa.select(notifications.c.state, sa.func.count(), age)
                .group_by(notifications.c.state)
                .order_by(notifications.c.state)
            ).all()
        return [
            StateCount(
                state=s, count=int(n), oldest_age_seconds=max(float(a or 0), 0.0)
            )
            for s, n, a in rows
        ]

    def rates(self, window_seconds: float = RATE_WINDOW_S) -> Rates:
        """Measured, not configured: e-mails finished and enrollment events stored
        in the last `window_seconds`."""
        since = sa.func.now() - timedelta(seconds=window_seconds)
        done = sa.select(sa.func.count()).where(
            ((notifications.c.state == "sent") & (notifications.c.sent_at >= since))
            | (
                (notifications.c.state == "failed")
                & (notifications.c.updated_at >= since)
            )
        )
        first = self._first_id_since(
            datetime.now(UTC) - timedelta(seconds=window_seconds)
        )
        with self._engine.connect() as conn:
            finished = int(conn.execute(done).scalar_one())
            arrived = 0
            if first is not None:
                arrived = int(
                    conn.execute(
                        sa.select(sa.func.count()).where(
                            (self._events.c.notification_id >= first)
                            & self._events.c.topic.like(ENROLLMENT_TOPICS)
                        )
                    ).scalar_one()
                )
        return Rates(
            window_seconds=window_seconds,
            enrollment_events=arrived,
            notifications_done=finished,
        )

    def store_sizes(self) -> dict[str, int]:
        """Rows kept for deduplication and answers: what retention must bound.
        Counted exactly while small; past EXACT_UP_TO rows, the planner's estimate
        (a count would scan the whole table at every look)."""
        sizes = {}
        with self._engine.connect() as conn:
            for table in (inbox, request_answers, notifications):
                estimate = conn.execute(
                    sa.text(
                        "SELECT reltuples FROM pg_class WHERE oid = to_regclass(:t)"
                    ),
                    {"t": table.name},
                ).scalar()
                if estimate is not None and estimate > EXACT_UP_TO:
                    sizes[table.name] = int(estimate)
                    continue
                count = sa.select(sa.func.count()).select_from(table)
                sizes[table.name] = int(conn.execute(count).scalar_one())
        return sizes

    def store_ages(self) -> dict[str, float | None]:
        """The oldest row's age in each store retention trims (None: empty): what
        says whether the trim keeps up. One index read each."""
        ages: dict[str, float | None] = {}
        with self._engine.connect() as conn:
            for table, column in (
                (inbox, inbox.c.applied_at),
                (request_answers, request_answers.c.created_at),
            ):
                oldest = sa.func.now() - sa.func.min(column)
                age = conn.execute(sa.select(sa.func.extract("epoch", oldest))).scalar()
                ages[table.name] = None if age is None else max(float(age), 0.0)
        return ages

    def inbox_horizons(self) -> dict[str, datetime]:
        """Per consumer: events from before this may have lost their inbox rows."""
        with self._engine.connect() as conn:
            rows = conn.execute(
                sa.select(inbox_horizons.c.consumer, inbox_horizons.c.occurred_before)
            ).all()
        return {str(consumer): when for consumer, when in rows}

    def projection_positions(self) -> dict[str, int]:
        with self._engine.connect() as conn:
            rows = conn.execute(
                sa.select(
                    consumer_positions.c.consumer, consumer_positions.c.stream_seq
                )
            ).all()
        return {name: int(seq) for name, seq in rows}

    def saga_deadlines(self) -> DeadlinesHop | None:
        """The saga's wake-up table, where it exists (None: this schema has none)."""
        with self._engine.connect() as conn:
            if (
                conn.execute(sa.text("SELECT to_regclass('saga_deadlines')")).scalar()
                is None
            ):
                return None
            row = conn.execute(
                sa.text(
                    "SELECT count(due_at), count(*) FILTER (WHERE due_at < now()),"
                    " extract(epoch FROM now() - min(due_at) FILTER"
                    " (WHERE due_at < now())) FROM saga_deadlines"
                )
            ).one()
        oldest = None if row[2] is None else float(row[2])
        return DeadlinesHop(
            scheduled=int(row[0]), overdue=int(row[1]), oldest_overdue_seconds=oldest
        )

    def roles_alive(self, within_seconds: float = ALIVE_WITHIN_S) -> list[RoleBeat]:
        """The roles whose heartbeat is younger than `within_seconds`."""
        return RoleBeats(self._engine).alive(within_seconds)

    def _age_of_first_after(self, position: int) -> float | None:
        """The first few, in case one cannot be decoded (the relay dead-letters
        such an event; the status must still answer)."""
        for stored in self._recorder.select_notifications(start=position + 1, limit=5):
            when = self._timestamp(stored)
            if when is not None:
                return _age(when)
        return None

    def _first_id_since(self, cutoff: datetime) -> int | None:
        """The first notification id stored at or after `cutoff`: a binary search
        over ids (the log has no time column; each event carries its timestamp)."""
        newest = self._recorder.max_notification_id()
        if not newest:
            return None
        low, high, found = 1, newest, None
        while low <= high:
            middle = (low + high) // 2
            [first, *_] = self._recorder.select_notifications(
                start=middle, limit=1
            ) or [None]
            when = None if first is None else self._timestamp(first)
            if first is None:
                high = middle - 1
            elif when is not None and when >= cutoff:
                found, high = first.id, middle - 1
            else:  # older, or undecodable: look further on
                low = first.id + 1
        return found

    def _timestamp(self, stored: Any) -> datetime | None:
        """None for a stored event this version cannot decode."""
        try:
            event = self._mapper.to_domain_event(stored)
        except Exception:  # our own stored data, as the relay treats it: skip it
            return None
        when = getattr(event, "timestamp", None)
        if not isinstance(when, datetime):
            return None
        return when if when.tzinfo else when.replace(tzinfo=UTC)


def _age(when: datetime) -> float:
    return max((datetime.now(UTC) - when).total_seconds(), 0.0)
