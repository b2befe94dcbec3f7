"""The objects every role shares: the application, the engine, the stores.

Its type only: `entrypoints.runtime.bootstrap.build` makes one. Routes and console
views take what they need from here; they construct no adapter themselves."""

from __future__ import annotations

import attrs
import sqlalchemy as sa

from adapters.postgres.deadlines import SagaDeadlines
from adapters.postgres.notifications import SqlNotificationStore
from adapters.postgres.replays import SqlReplayAudits
from adapters.postgres.students import SqlStudentDirectory
from adapters.postgres.webhooks import WebhookLog
from application.club import ClubApplication


@attrs.define
class Container:
    app: ClubApplication
    engine: sa.Engine
    students: SqlStudentDirectory
    notifications: SqlNotificationStore
    # Nudges only (a new purchase, a webhook's fact, a consent): the saga role
    # claims through its own, named after its process (`bootstrap.saga_deadlines`).
    deadlines: SagaDeadlines
    webhooks: WebhookLog  # the payment webhooks received, and those refused
    replays: SqlReplayAudits  # the audit records of dead-letter replays

    def close(self) -> None:
        self.app.close()
        self.engine.dispose()
