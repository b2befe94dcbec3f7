"""Times as published: RFC 3339 in UTC with a `Z`, and never a naive datetime."""

from __future__ import annotations

from datetime import datetime


def rfc3339(moment: datetime) -> str:
    """A naive time has no instant: refused, never guessed (the relay dead-letters
    an event that carries one instead of publishing a wrong time)."""
    if moment.tzinfo is None:
        raise ValueError("a published time must be time-zone aware")
    return moment.isoformat().replace("+00:00", "Z")
