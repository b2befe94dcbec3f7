"""Problem details (RFC 9457) for every error the API can give."""

from __future__ import annotations

from typing import Any

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from adapters.identity.tokens import InvalidTokenError, KeysUnavailableError

# Failures that pass (one definition for every role): retry the same request.
from adapters.transient import TRANSIENT
from application.errors import NotFoundError, UnknownStudentError
from application.idempotency import KeyReusedError
from application.identity import ForbiddenError
from domain.errors import (
    AlreadyEnrolledError,
    AlternativePriceError,
    InvalidLessonError,
    InvalidPurchaseError,
    InvalidStudentProfileError,
    InvalidTextError,
    LessonFullError,
    PaidLessonError,
    PaymentMismatchError,
    PurchaseStateError,
    SeatNotHeldError,
)
from entrypoints.http.paging import BadCursorError
from entrypoints.http.rate_limit import RateLimitedError

log = structlog.get_logger()
MEDIA_TYPE = "application/problem+json"
RETRY_AFTER_S = "2"


def problem(
    status: int,
    slug: str | None,
    title: str,
    detail: str | None = None,
    headers: dict[str, str] | None = None,
    **extensions: Any,
) -> JSONResponse:
    body: dict[str, Any] = {
        "type": f"/problems/{slug}" if slug else "about:blank",
        "title": title,
        "status": status,
    }
    if detail:
        body["detail"] = detail
    body.update(extensions)
    return JSONResponse(
        body, status_code=status, media_type=MEDIA_TYPE, headers=headers
    )


# Error class -> (status, slug, title). The first matching class wins.
KNOWN: list[tuple[type[Exception], int, str, str]] = [
    (LessonFullError, 409, "lesson-full", "The lesson is full"),
    (PaidLessonError, 409, "paid-lesson", "A paid lesson is bought, not enrolled in"),
    (AlreadyEnrolledError, 409, "already-enrolled", "Already enrolled"),
    (InvalidLessonError, 422, "invalid-lesson", "The lesson is not valid"),
    (InvalidStudentProfileError, 422, "invalid-student", "The student is not valid"),
    (InvalidTextError, 422, "invalid-text", "The text is not accepted"),
    (UnknownStudentError, 422, "unknown-student", "The student has no profile"),
    (NotFoundError, 404, "not-found", "Not found"),
    (BadCursorError, 422, "bad-cursor", "The page cursor is not valid"),
    (ForbiddenError, 403, "forbidden", "Forbidden"),
    (KeyReusedError, 422, "idempotency-key-reused", "Idempotency-Key reused"),
    (InvalidPurchaseError, 422, "invalid-purchase", "The purchase is not valid"),
    (AlternativePriceError, 422, "alternative-price", "Another price than paid"),
    (PurchaseStateError, 409, "purchase-state", "Not possible in this state"),
    (PaymentMismatchError, 409, "payment-mismatch", "Another payment"),
    (SeatNotHeldError, 409, "seat-not-held", "The seat is not held"),
]


def problem_for(error: BaseException) -> JSONResponse | None:
    """The answer for a known error, or None for a bug (which is a 500)."""
    if isinstance(error, InvalidTokenError):
        return problem(
            401, "invalid-token", "Unauthorized", str(error),
            headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
        )  # fmt: skip
    if isinstance(error, RateLimitedError):
        return problem(
            429, "too-many-requests", "Too many requests", str(error),
            headers={"Retry-After": str(error.retry_after_s)},
        )  # fmt: skip
    if isinstance(error, KeysUnavailableError):
        return problem(
            503, "identity-provider-unavailable", "Temporarily unavailable",
            "the identity provider's keys could not be fetched; retry",
            headers={"Retry-After": RETRY_AFTER_S},
        )  # fmt: skip
    for cls, status, slug, title in KNOWN:
        if isinstance(error, cls):
            return problem(status, slug, title, str(error))
    if isinstance(error, TRANSIENT):
        return problem(
            503,
            "temporarily-unavailable",
            "Temporarily unavailable",
            "the database is busy or unreachable; retry with the same Idempotency-Key",
            headers={"Retry-After": RETRY_AFTER_S},
        )
    return None


KNOWN_ERRORS: tuple[type[Exception], ...] = (
    InvalidTokenError,
    KeysUnavailableError,
    RateLimitedError,
    *(cls for cls, *_ in KNOWN),
    *TRANSIENT,
)


def key_problem(errors: list[dict[str, Any]]) -> JSONResponse | None:
    """A bad Idempotency-Key is a 400 (as before the header was declared), unless
    the body is wrong too: then the 422 names every error."""
    if not errors or any(e["loc"] != ["header", "Idempotency-Key"] for e in errors):
        return None
    if errors[0]["type"] == "missing":
        return problem(
            400, "idempotency-key-missing", "Idempotency-Key required",
            "send a unique Idempotency-Key header; reuse it to retry this request",
        )  # fmt: skip
    return problem(
        400, "invalid-idempotency-key", "Invalid Idempotency-Key",
        f"Idempotency-Key: {errors[0]['msg']}",
    )  # fmt: skip


def install_error_handlers(api: FastAPI) -> None:
    @api.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> Response:
        title = {404: "Not Found", 405: "Method Not Allowed"}.get(
            exc.status_code, "Error"
        )
        return problem(
            exc.status_code,
            None,
            title,
            str(exc.detail),
            headers=dict(exc.headers or {}),
        )

    @api.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> Response:
        errors = [
            {"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]}
            for e in exc.errors()
        ]
        return key_problem(errors) or problem(
            422, "validation-error", "Invalid request", errors=errors
        )

    async def known(_: Request, exc: Exception) -> Response:
        response = problem_for(exc)
        assert response is not None  # noqa: S101 - registered only for known classes
        return response

    # Registered one by one: the catch-all below would answer, then re-raise.
    for cls in KNOWN_ERRORS:
        api.add_exception_handler(cls, known)

    @api.exception_handler(Exception)
    async def bug(_: Request, exc: Exception) -> Response:
        log.exception("http.unhandled", error=repr(exc))
        return problem(500, "internal-error", "Internal error", "see the server log")
