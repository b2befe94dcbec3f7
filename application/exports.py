"""Roster exports, the request side: record the request as an event, read it back.

The request is an `Export` aggregate saved in the Club event store, so it commits
in the one store whose notification log is the outbox: the relay publishes
`ExportRequested` like any other event, and a request answered `202` is never lost.
The answer says only "recorded" (pending); the worker says the rest.
"""

from __future__ import annotations

from uuid import UUID, uuid5

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.persistence import IntegrityError

from application.club_store import ClubStore
from application.commands import RequestExport
from application.errors import ContentionError, NotFoundError
from application.idempotency import Answer, AnswerFor, Request, replay, request_id
from application.ids import CLUB_NS
from domain.export import Export

OPERATION = "operation"  # what a missing export is called to the client


def export_id_for(lesson_id: UUID, key: str) -> UUID:
    """A retried request (same key, same lesson) names the export it first made."""
    return uuid5(CLUB_NS, f"export:{lesson_id}:{key}")


class ExportUseCases(ClubStore):
    """The export's use cases, methods of `ClubApplication` (its base class)."""

    def request_export(self, cmd: RequestExport) -> Export:
        """Without a key: every call is a new export. Raises NotFoundError (no
        lesson)."""
        export = self._new_export(cmd)
        self.save(export)
        return export

    def request_export_once(
        self, cmd: RequestExport, request: Request, answer_for: AnswerFor
    ) -> Answer:
        """With a key: the export's request and the answer commit together, once.

        An unknown lesson raises NotFoundError before anything is stored, so the key
        stays free (the 404 is not kept: nothing was decided)."""
        answers = self._answers()
        recorded = answers.find([request]).get(request_id(request))
        if recorded is not None:
            return replay(request, recorded)
        export = self._new_export(cmd)
        answer = answer_for(export)
        if answer is None:
            raise ContentionError("the export could not be answered; try again")
        try:
            self.save(export, answers=[(request, answer)])
        except IntegrityError:  # a racing attempt with this key committed first
            recorded = answers.find([request]).get(request_id(request))
            if recorded is None:
                msg = "the export is being requested; try again"
                raise ContentionError(msg) from None
            return replay(request, recorded)
        return answer

    def get_export(self, export_id: UUID) -> Export:
        try:
            export: object = self.repository.get(export_id)
        except AggregateNotFoundError:
            raise NotFoundError(OPERATION, export_id) from None
        if not isinstance(export, Export):  # another aggregate's id
            raise NotFoundError(OPERATION, export_id)
        return export

    def _new_export(self, cmd: RequestExport) -> Export:
        lesson = self.get_lesson(cmd.lesson_id)  # NotFoundError: a 404, none recorded
        return Export.request(
            export_id=cmd.export_id,
            lesson_id=lesson.id,
            lesson_version=lesson.version,  # the roster is exported as it stands now
            requested_at=cmd.requested_at,
        )


def get_export(app: ExportUseCases, export_id: UUID) -> Export:
    """Kept for a caller not yet moved to the method: `app.get_export(id)`."""
    return app.get_export(export_id)
