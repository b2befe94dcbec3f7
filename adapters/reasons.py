"""Why a message was dead-lettered or skipped, as one short line of printable text.

The reason travels in a NATS header and lands in a PostgreSQL `text` column; an
error's message may quote the hostile input itself (a CR LF that would split the
header, a NUL that `text` refuses), so only printable characters survive.
"""

from __future__ import annotations

import psycopg
from sqlalchemy.exc import StatementError

MAX_REASON_CHARS = 500
DATA_EXCEPTION = "22"  # SQLSTATE class whose messages quote the offending value


def one_line(text: str, limit: int = MAX_REASON_CHARS) -> str:
    printable = "".join(c if c.isprintable() else " " for c in text)
    joined = " ".join(printable.split())
    return joined if len(joined) <= limit else joined[: limit - 1] + "…"


def describe(error: BaseException) -> str:
    """The error's class and message; a driver error without SQLAlchemy's SQL dump
    and without the values PostgreSQL quotes (see `_server_said`)."""
    if isinstance(error, StatementError) and isinstance(error.orig, Exception):
        error = error.orig
    driver = _driver_error(error)
    if driver is not None and driver.diag.message_primary:
        return one_line(f"{type(error).__name__}: {_server_said(driver.diag)}")
    return one_line(f"{type(error).__name__}: {error}")


def _driver_error(error: BaseException) -> psycopg.Error | None:
    """The psycopg error itself, or the one a library re-raised as its own (the
    event store's errors carry psycopg's whole text, DETAIL and all)."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, psycopg.Error):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__
    return None


def _server_said(diag: psycopg.errors.Diagnostic) -> str:
    """The server's primary message only: its DETAIL repeats the row or the key
    (`Key (email)=(ann@…)`), and a data exception's message quotes the value it
    refused — addresses and names that must not reach logs or dead letters."""
    primary = diag.message_primary or ""
    if (diag.sqlstate or "").startswith(DATA_EXCEPTION) and '"' in primary:
        # From the first quote on: a value may hold quotes of its own, unescaped.
        primary = primary.split('"', 1)[0] + '"…"'
    return primary
