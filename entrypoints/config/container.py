"""The objects every role shares: the application, the engine, the stores.

Its type only: `entrypoints.runtime.bootstrap.build` makes one."""

from __future__ import annotations

import attrs
import sqlalchemy as sa

from adapters.postgres.notifications import SqlNotificationStore
from adapters.postgres.students import SqlStudentDirectory
from application.club import ClubApplication


@attrs.define
class Container:
    app: ClubApplication
    engine: sa.Engine
    students: SqlStudentDirectory
    notifications: SqlNotificationStore

    def close(self) -> None:
        self.app.close()
        self.engine.dispose()
