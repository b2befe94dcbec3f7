"""The answers to Idempotency-Keys, in PostgreSQL (the `AnswerStore` port).

Answers that came with events are inserted by `ClubRecorder` in the events'
transaction (its insert function); this store reads them and keeps the answers of
requests that changed nothing. These rows are what makes a repeat recognisable, so
they commit as durably as the events they answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert

from adapters.postgres.tables import request_answers as answers
from application.idempotency import (
    Answer,
    Recorded,
    Request,
    RequestId,
    request_id,
)

# Built once: SQLAlchemy caches a compiled statement by the statement object, and
# building a tuple IN per call cost about as much as the read (1.1 -> 0.6 ms CPU).
_ONE = sa.select(answers).where(
    answers.c.scope == sa.bindparam("scope"), answers.c.key == sa.bindparam("key")
)


class SqlAnswerStore:
    def __init__(self, engine: sa.Engine) -> None:
        self._engine = engine
        # A lookup is one statement: no BEGIN and ROLLBACK round trips around it.
        self._reader = engine.execution_options(isolation_level="AUTOCOMMIT")

    def find(self, requests: Sequence[Request]) -> dict[RequestId, Recorded]:
        if not requests:
            return {}
        with self._reader.connect() as conn:
            if len(requests) == 1:  # every request's own lookup
                [one] = requests
                rows = conn.execute(_ONE, {"scope": one.scope, "key": one.key})
            else:  # a group's, after a race
                ids = sa.tuple_(answers.c.scope, answers.c.key)
                wanted = [sa.tuple_(r.scope, r.key) for r in requests]
                rows = conn.execute(sa.select(answers).where(ids.in_(wanted)))
            return {(row.scope, row.key): recorded_from(row) for row in rows}

    def record(
        self, rows: Sequence[tuple[Request, Answer]]
    ) -> dict[RequestId, Recorded]:
        if not rows:
            return {}
        values = [
            {
                "scope": request.scope,
                "key": request.key,
                "fingerprint": request.fingerprint,
                "status_code": answer.status_code,
                "body": answer.body,
                "headers": dict(answer.headers),
            }
            for request, answer in rows
        ]
        with self._engine.begin() as conn:
            stored = conn.execute(
                insert(answers)
                .on_conflict_do_nothing()
                .returning(answers.c.scope, answers.c.key),
                values,
            )
            inserted = {(scope, key) for scope, key in stored}
        ours = {
            request_id(request): Recorded(
                fingerprint=request.fingerprint, answer=answer
            )
            for request, answer in rows
        }
        raced = [request for request, _ in rows if request_id(request) not in inserted]
        return ours | self.find(raced)


class AnswerRow(Protocol):
    """A row of `request_answers`, from SQLAlchemy or psycopg's `namedtuple_row`."""

    fingerprint: str
    status_code: int
    body: Any
    headers: dict[str, str]


def recorded_from(row: AnswerRow) -> Recorded:
    """A row with `fingerprint`, `status_code`, `body` and `headers`."""
    return Recorded(
        fingerprint=row.fingerprint,
        answer=Answer(
            status_code=row.status_code, body=row.body, headers=dict(row.headers)
        ),
    )
