"""What Club runs, by name: its projections, its work classes and its roles.

Names only (and the tables each projection owns): the wiring that builds each of
them lives in `entrypoints.runtime`, and the console reads this list without it.
"""

from __future__ import annotations

import attrs
import sqlalchemy as sa

from adapters.postgres.inbox import Apply
from projections import rosters, statistics

# Projection name -> (its tables, its apply function) for the consumer runner.
PROJECTIONS: dict[str, tuple[sa.MetaData, Apply]] = {
    rosters.NAME: (rosters.metadata, rosters.apply),
    statistics.NAME: (statistics.metadata, statistics.apply),
}


@attrs.frozen(kw_only=True)
class WorkClass:
    """A kind of job with its own durable and bounded pool (docs/background.md §33):
    a pile of exports never occupies a notification's slot."""

    name: str  # its durable, its DLQ subject, its `club worker NAME`
    subjects: str  # the durable's filter
    slots: int  # jobs at once; the role's connections and threads follow it


# The urgent work class: one e-mail per enrollment or purchase event that asks for one.
NOTIFICATIONS = "notifications"
# The heavy work class: roster exports, 2 slots of its own.
EXPORTS = "exports"

WORK_CLASSES: dict[str, WorkClass] = {
    NOTIFICATIONS: WorkClass(
        name=NOTIFICATIONS,
        # One filter over enrollments and purchases (a durable takes one here);
        # lessons and exports are acked unread by the job (docs/events.md §1).
        subjects="club.events.>",
        slots=8,
    ),
    EXPORTS: WorkClass(
        name=EXPORTS, subjects="club.events.export.ExportRequested", slots=2
    ),
}


@attrs.frozen
class Role:
    """One long-running process kind; `name` picks the projection or work class."""

    kind: str  # api | relay | projector | worker | saga | trim | sandbox
    name: str = ""

    @property
    def argv(self) -> list[str]:
        return [self.kind, self.name] if self.name else [self.kind]

    @property
    def durable(self) -> str | None:
        """The JetStream durable it pulls (and the NATS user it needs), if any."""
        return self.name if self.kind in ("projector", "worker") else None


# The one list of roles: `club up` starts it, the broker's users are made for it,
# the CLI names its choices from it.
ROLES: tuple[Role, ...] = (
    Role("api"),
    Role("relay"),
    *(Role("projector", name) for name in PROJECTIONS),
    *(Role("worker", name) for name in WORK_CLASSES),
    Role("saga"),
    Role("trim"),  # retention: docs/decisions/2026-11-30-retention.md
    Role("sandbox", "email"),
    Role("sandbox", "payment"),
)
CONSUMERS = tuple(role.durable for role in ROLES if role.durable)
