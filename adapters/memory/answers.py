"""Answers to Idempotency-Keys in a dict: the `AnswerStore` for unit tests.

Without the event store's transaction an answer saved with events is not written
here (`save(..., answers=...)` is ignored by the in-memory recorder), so only the
answers of requests that changed nothing are kept: enough for the use cases' logic,
not for the races the PostgreSQL store settles.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from application.idempotency import Answer, Recorded, Request, RequestId, request_id


class InMemoryAnswerStore:
    def __init__(self) -> None:
        self._answers: dict[RequestId, Recorded] = {}
        self._lock = threading.Lock()

    def find(self, requests: Sequence[Request]) -> dict[RequestId, Recorded]:
        with self._lock:
            return {
                request_id(r): self._answers[request_id(r)]
                for r in requests
                if request_id(r) in self._answers
            }

    def record(
        self, answers: Sequence[tuple[Request, Answer]]
    ) -> dict[RequestId, Recorded]:
        with self._lock:
            for request, answer in answers:
                self._answers.setdefault(
                    request_id(request),
                    Recorded(fingerprint=request.fingerprint, answer=answer),
                )
            return {request_id(r): self._answers[request_id(r)] for r, _ in answers}
