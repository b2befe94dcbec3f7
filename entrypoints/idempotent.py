"""Idempotency-Key handling for the HTTP API (the IETF httpapi draft's semantics)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse, Response

from adapters.crash import crash_point
from adapters.postgres.idempotency import InFlight, Mismatch, Replay, Started
from entrypoints.bootstrap import Container
from entrypoints.problems import problem, problem_for

MAX_KEY_LENGTH = 255


def run_once(
    container: Container,
    request: Request,
    key: str,
    body: Any,
    run: Callable[[], JSONResponse],
) -> Response:
    """Run once per key; replay the stored answer to every retry."""
    if not 0 < len(key) <= MAX_KEY_LENGTH:
        return problem(
            400, "invalid-idempotency-key", "Invalid Idempotency-Key",
            f"the key must be 1 to {MAX_KEY_LENGTH} characters",
        )  # fmt: skip
    scope = f"{request.method} {request.scope['route'].path}"
    canonical = json.dumps([request.url.path, body], sort_keys=True)
    fingerprint = hashlib.sha256(canonical.encode()).hexdigest()
    store = container.idempotency
    match store.begin(scope, key, fingerprint):
        case Replay(status_code, stored, headers):
            media = headers.pop("content-type", None)
            return JSONResponse(stored, status_code, headers=headers, media_type=media)
        case Mismatch():
            return problem(
                422, "idempotency-key-reused", "Idempotency-Key reused",
                "this key was used with another request body; use a new key",
            )  # fmt: skip
        case InFlight():
            return problem(
                409, "request-in-flight", "Request in flight",
                "the first request with this key is still running; retry shortly",
                headers={"Retry-After": "1"},
            )  # fmt: skip
        case Started():
            pass
    try:
        response = run()
        crash_point(
            "api.after_commit"
        )  # committed; the answer is neither stored nor sent
    except Exception as error:
        known = problem_for(error)
        if known is None or known.status_code >= 500:  # noqa: PLR2004
            store.release(scope, key)  # let the retry run afresh
            raise
        response = known
    headers = {k: v for k, v in response.headers.items() if k in ("location",)}
    headers["content-type"] = response.media_type or "application/json"
    store.complete(scope, key, response.status_code, json.loads(response.body), headers)
    return response
