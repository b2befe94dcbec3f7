"""Every log line a request causes names it: `request_id`, and the resource's id.

The request id is the caller's `X-Request-ID` when it is a plain token (so one id
follows a request through a proxy and its client), else one made here; either way
it is echoed in the answer's `X-Request-ID`, so a user's report can be matched to
the log. An enrollment, purchase, operation or lesson named in the path is bound as
`enrollment_id`, `purchase_id`, `operation_id` or `lesson_id` beside it. Both are
`structlog.contextvars`, bound for the request and reset after it (`edge.py`).
"""

from __future__ import annotations

import re
from uuid import UUID

HEADER = b"x-request-id"
# No '@', no space, no control character: a caller's id cannot smuggle an address
# or a second line into the log, nor a header into the answer.
WELL_FORMED = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_CANONICAL_UUID = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
)
PATH_IDS = {
    "enrollments": "enrollment_id",
    "purchases": "purchase_id",
    "operations": "operation_id",
    "lessons": "lesson_id",
}


def well_formed(given: bytes | None) -> str | None:
    """The caller's request id if it is well formed, else None (one is made)."""
    if given is None:
        return None
    text = given.decode("latin-1").strip()
    return text if WELL_FORMED.fullmatch(text) else None


def path_ids(path: str) -> dict[str, str]:
    """`/enrollments/{id}/...` -> {"enrollment_id": id}; only a UUID is taken, so
    what a client typed in a path never reaches a log line as an id."""
    parts = path.strip("/").split("/")
    if len(parts) < 2 or parts[0] not in PATH_IDS:  # noqa: PLR2004 - kind and id
        return {}
    given = parts[1]
    if _CANONICAL_UUID.fullmatch(given):  # as str(UUID(given)) writes it
        return {PATH_IDS[parts[0]]: given}
    try:
        return {PATH_IDS[parts[0]]: str(UUID(given))}
    except ValueError:
        return {}
