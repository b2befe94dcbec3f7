"""Roles that say they are alive: each process stamps its row in `role_beats` with
the database's clock every few seconds, and removes it when it stops cleanly. A
role killed outright leaves its row behind, but the row ages out of `alive`."""

from __future__ import annotations

import os
import secrets
import socket
from datetime import timedelta

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert

from adapters.postgres.tables import role_beats
from application.console_reads import ALIVE_WITHIN_S, RoleBeat

KEEP_SILENT_S = 24 * 3600.0  # a killed role's row is deleted after a day


def instance_name() -> str:
    """One process's name among the beats: host:pid:random (a pid is reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


class RoleBeats:
    """The heartbeats table: `beat`, `forget`, and which roles are `alive`."""

    def __init__(self, engine: sa.Engine) -> None:
        self._engine = engine

    def beat(self, instance: str, kind: str, name: str = "") -> None:
        """Stamp this process's row with the database's now() (one upsert)."""
        now = sa.func.now()
        row = insert(role_beats).values(
            instance=instance,
            kind=kind,
            name=name,
            host=socket.gethostname(),
            pid=os.getpid(),
            started_at=now,
            beat_at=now,
        )
        with self._engine.begin() as conn:
            conn.execute(
                row.on_conflict_do_update(
                    index_elements=[role_beats.c.instance], set_={"beat_at": now}
                )
            )

    def forget(self, instance: str) -> None:
        """A clean stop: the role is gone at once, not after the window."""
        with self._engine.begin() as conn:
            conn.execute(sa.delete(role_beats).where(role_beats.c.instance == instance))

    def forget_silent(self, seconds: float = KEEP_SILENT_S) -> int:
        """Delete the rows of roles silent for longer than `seconds` (killed ones);
        returns how many."""
        cutoff = sa.func.now() - timedelta(seconds=seconds)
        with self._engine.begin() as conn:
            gone = conn.execute(
                sa.delete(role_beats).where(role_beats.c.beat_at < cutoff)
            )
        return int(gone.rowcount or 0)

    def alive(self, within_seconds: float = ALIVE_WITHIN_S) -> list[RoleBeat]:
        """Every role that beat within `within_seconds`, by kind, name, instance."""
        ago = sa.func.extract("epoch", sa.func.now() - role_beats.c.beat_at)
        cutoff = sa.func.now() - timedelta(seconds=within_seconds)
        with self._engine.connect() as conn:
            rows = conn.execute(
                sa.select(
                    role_beats.c.kind,
                    role_beats.c.name,
                    role_beats.c.instance,
                    role_beats.c.host,
                    role_beats.c.pid,
                    ago,
                )
                .where(role_beats.c.beat_at >= cutoff)
                .order_by(role_beats.c.kind, role_beats.c.name, role_beats.c.instance)
            ).all()
        return [
            RoleBeat(
                kind=kind,
                name=name,
                instance=instance,
                host=host,
                pid=int(pid),
                last_beat_seconds_ago=max(float(seconds), 0.0),
            )
            for kind, name, instance, host, pid, seconds in rows
        ]
