"""Roster exports, the request side: record the request as an event, read it back.

The request is an `Export` aggregate saved by the ClubApplication, so it commits
in the one event store whose notification log is the outbox: the relay publishes
`ExportRequested` like any other event, and a request answered `202` is never lost.
The answer says only "recorded" (pending); the worker says the rest.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID, uuid5

import attrs
from eventsourcing.application import AggregateNotFoundError
from eventsourcing.persistence import IntegrityError

from application.club import ClubApplication
from application.errors import ContentionError, NotFoundError
from application.idempotency import (
    Answer,
    AnswerFor,
    Request,
    replay,
    request_id,
)
from application.ids import CLUB_NS
from application.ports import AnswerStore
from domain.export import Export

OPERATION = "operation"  # what a missing export is called to the client


@attrs.frozen(kw_only=True)
class RequestExport:
    export_id: UUID
    lesson_id: UUID
    requested_at: datetime


def export_id_for(lesson_id: UUID, key: str) -> UUID:
    """A retried request (same key, same lesson) names the export it first made."""
    return uuid5(CLUB_NS, f"export:{lesson_id}:{key}")


def request_export(app: ClubApplication, cmd: RequestExport) -> Export:
    """Without a key: every call is a new export. Raises NotFoundError (no lesson)."""
    export = _new_export(app, cmd)
    app.save(export)
    return export


def request_export_once(
    app: ClubApplication, cmd: RequestExport, request: Request, answer_for: AnswerFor
) -> Answer:
    """With a key: the export's request and the answer commit together, once.

    An unknown lesson raises NotFoundError before anything is stored, so the key
    stays free (the 404 is not kept: nothing was decided)."""
    answers = _answers(app)
    recorded = answers.find([request]).get(request_id(request))
    if recorded is not None:
        return replay(request, recorded)
    export = _new_export(app, cmd)
    answer = answer_for(export)
    if answer is None:
        raise ContentionError("the export could not be answered; try again")
    try:
        app.save(export, answers=[(request, answer)])
    except IntegrityError:  # a racing attempt with this key committed first
        recorded = answers.find([request]).get(request_id(request))
        if recorded is None:
            raise ContentionError("the export is being requested; try again") from None
        return replay(request, recorded)
    return answer


def get_export(app: ClubApplication, export_id: UUID) -> Export:
    try:
        export: object = app.repository.get(export_id)
    except AggregateNotFoundError:
        raise NotFoundError(OPERATION, export_id) from None
    if not isinstance(export, Export):  # another aggregate's id
        raise NotFoundError(OPERATION, export_id)
    return export


def _new_export(app: ClubApplication, cmd: RequestExport) -> Export:
    lesson = app.get_lesson(cmd.lesson_id)  # NotFoundError: a 404, nothing recorded
    return Export.request(
        export_id=cmd.export_id,
        lesson_id=lesson.id,
        lesson_version=lesson.version,  # the roster is exported as it stands now
        requested_at=cmd.requested_at,
    )


def _answers(app: ClubApplication) -> AnswerStore:
    if app.answers is None:
        raise RuntimeError("idempotent use cases need an AnswerStore")
    return app.answers
