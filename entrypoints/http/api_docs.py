"""What `/openapi.json` says beyond the bodies: error answers, headers, links.

A client (or a fuzzer) that reads only the schema must learn every answer a route
can give and how to reach the resources it creates (OpenAPI `links`).
"""

from __future__ import annotations

from typing import Any

from entrypoints.http.problems import MEDIA_TYPE

PROBLEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Problem details (RFC 9457).",
    "required": ["type", "title", "status"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
    },
}
_WHY = {
    400: "A missing or malformed Idempotency-Key header.",
    401: "No bearer token, or one that is malformed, expired or badly signed "
    '(WWW-Authenticate: Bearer error="invalid_token"); on /ops, no or a wrong '
    "operator token.",
    403: "A good token without the right (another student's enrollment request, "
    "another teacher's lesson, the statistics without admin).",
    404: "No such resource, or someone else's enrollment or purchase.",
    409: "Refused by a rule (lesson full, already enrolled) or the same "
    "Idempotency-Key still in flight.",
    413: "The request body is over 64 KiB.",
    422: "The body, a path or query parameter breaks a stated constraint, or the "
    "same Idempotency-Key came with another body.",
    503: "The database is busy or unreachable, or the deadline passed: retry later "
    "(see Retry-After).",
}


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """`responses=` entries for the problem details a route may answer."""
    return {
        status: {
            "description": _WHY[status],
            "content": {MEDIA_TYPE: {"schema": PROBLEM_SCHEMA}},
        }
        for status in statuses
    }


def links(**targets: tuple[str, dict[str, str]]) -> dict[str, Any]:
    """`{"links": …}` for a response: name -> (operationId, parameters)."""
    return {
        "links": {
            name: {"operationId": operation, "parameters": parameters}
            for name, (operation, parameters) in targets.items()
        }
    }


def merged(*parts: dict[int | str, dict[str, Any]]) -> dict[int | str, dict[str, Any]]:
    out: dict[int | str, dict[str, Any]] = {}
    for part in parts:
        for status, response in part.items():
            out.setdefault(status, {}).update(response)
    return out


LESSON_ID = "$response.body#/lesson_id"
ENROLLMENT_ID = "$response.body#/enrollment_id"
LESSON_LINKS = links(
    GetLesson=("get_lesson", {"lesson_id": LESSON_ID}),
    GetRoster=("get_roster", {"lesson_id": LESSON_ID}),
    EnrollStudent=("enroll_student", {"lesson_id": LESSON_ID}),
)
ENROLLMENT_LINKS = links(
    GetEnrollment=("get_enrollment", {"enrollment_id": ENROLLMENT_ID}),
    CancelEnrollment=("cancel_enrollment", {"enrollment_id": ENROLLMENT_ID}),
)
