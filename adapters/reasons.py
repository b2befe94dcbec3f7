"""Why a message was dead-lettered or skipped, as one short line of printable text.

The reason travels in a NATS header and lands in a PostgreSQL `text` column; an
error's message may quote the hostile input itself (a CR LF that would split the
header, a NUL that `text` refuses), so only printable characters survive.
"""

from __future__ import annotations

from sqlalchemy.exc import StatementError

MAX_REASON_CHARS = 500


def one_line(text: str, limit: int = MAX_REASON_CHARS) -> str:
    printable = "".join(c if c.isprintable() else " " for c in text)
    joined = " ".join(printable.split())
    return joined if len(joined) <= limit else joined[: limit - 1] + "…"


def describe(error: BaseException) -> str:
    """The error's class and message; a driver error without SQLAlchemy's SQL dump."""
    if isinstance(error, StatementError) and isinstance(error.orig, Exception):
        error = error.orig
    return one_line(f"{type(error).__name__}: {error}")
