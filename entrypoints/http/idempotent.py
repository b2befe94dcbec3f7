"""Idempotency-Key handling for the HTTP API (the IETF httpapi draft's semantics).

The route names its use case; the answer the client gets is the one committed with
the effect (`application/idempotency.py`), so a retry, a racing repeat or a repeat
after a lost reply is told exactly what the first attempt was told.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse, Response

from adapters.crash import crash_point
from application.idempotency import Answer, AnswerFor
from application.idempotency import Request as KeyedRequest
from entrypoints.http.problems import problem, problem_for

MAX_KEY_LENGTH = 255

# Runs the use case for a keyed request: returns the answer to give.
UseCase = Callable[[KeyedRequest, AnswerFor], Answer]


def run_once(
    request: Request,
    key: str,
    body: Any,
    use_case: UseCase,
    respond: Callable[[object], JSONResponse | Answer],
) -> Response:
    """`respond` turns the use case's result into the response to store and give
    (an `Answer` as it is stored, or a response to read it from); a known error
    becomes its problem details, a passing failure is not stored."""
    if not 0 < len(key) <= MAX_KEY_LENGTH:
        return problem(
            400, "invalid-idempotency-key", "Invalid Idempotency-Key",
            f"the key must be 1 to {MAX_KEY_LENGTH} characters",
        )  # fmt: skip
    # The caller is part of what a key names: another caller's retry of "the same"
    # request is refused (422), never handed the first caller's answer.
    caller = getattr(request.state, "caller", None)
    sub = None if caller is None else caller.sub
    canonical = json.dumps([request.url.path, body, sub], sort_keys=True)
    keyed = KeyedRequest(
        scope=f"{request.method} {request.scope['route'].path}",
        key=key,
        fingerprint=hashlib.sha256(canonical.encode()).hexdigest(),
    )

    def answer_for(outcome: object) -> Answer | None:
        if isinstance(outcome, BaseException):
            known = problem_for(outcome)
            if known is None or known.status_code >= 500:  # noqa: PLR2004
                return None  # a bug or a passing failure: a retry runs afresh
            return _answer(known)
        answered = respond(outcome)
        return answered if isinstance(answered, Answer) else _answer(answered)

    answer = use_case(keyed, answer_for)
    crash_point("api.after_commit")  # committed; the answer is not yet sent
    headers = dict(answer.headers)
    media = headers.pop("content-type", None)
    return JSONResponse(
        answer.body, answer.status_code, headers=headers, media_type=media
    )


def _answer(response: JSONResponse) -> Answer:
    headers = {k: v for k, v in response.headers.items() if k == "location"}
    headers["content-type"] = response.media_type or "application/json"
    return Answer(
        status_code=response.status_code,
        body=json.loads(bytes(response.body)),
        headers=headers,
    )
