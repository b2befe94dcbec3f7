"""Lists come in pages (contract §4.1): `?limit=` (100 by default, at most 1,000)
and a `next` link holding an opaque cursor, so no request reads a table whole."""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import Annotated
from urllib.parse import urlencode
from uuid import UUID

from fastapi import Query

DEFAULT_LIMIT, MAX_LIMIT = 100, 1000

Limit = Annotated[
    int, Query(ge=1, le=MAX_LIMIT, description="At most this many items (1 to 1000).")
]
After = Annotated[
    str | None,
    Query(max_length=200, description="The cursor a previous page's `next` holds."),
]


class BadCursorError(ValueError):
    """A cursor this API did not write: 422."""


def encode(*parts: object) -> str:
    text = "|".join(str(p) for p in parts)
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _parts(cursor: str, count: int) -> list[str]:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise BadCursorError("the cursor is not one this API wrote") from None
    parts = text.split("|")
    if len(parts) != count:
        raise BadCursorError("the cursor is not one this API wrote")
    return parts


def lesson_cursor(cursor: str | None) -> UUID | None:
    if cursor is None:
        return None
    try:
        return UUID(_parts(cursor, 1)[0])
    except ValueError:
        raise BadCursorError("the cursor is not one this API wrote") from None


def roster_cursor(cursor: str | None) -> tuple[datetime, UUID] | None:
    if cursor is None:
        return None
    enrolled_at, enrollment_id = _parts(cursor, 2)
    try:
        at = datetime.fromisoformat(enrolled_at)
        if at.tzinfo is None:
            raise ValueError("naive")
        return at, UUID(enrollment_id)
    except ValueError:
        raise BadCursorError("the cursor is not one this API wrote") from None


def next_link(path: str, limit: int, cursor: str | None) -> str | None:
    """The next page's address, or None on the last page."""
    if cursor is None:
        return None
    return f"{path}?{urlencode({'limit': limit, 'after': cursor})}"
