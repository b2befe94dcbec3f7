"""Why a message was dead-lettered or skipped, as one short line of printable text.

The reason travels in a NATS header and lands in a PostgreSQL `text` column; an
error's message may quote the hostile input itself (a CR LF that would split the
header, a NUL that `text` refuses), so only printable characters survive.
"""

from __future__ import annotations

import re

import psycopg
from sqlalchemy.exc import StatementError

MAX_REASON_CHARS = 500
DATA_EXCEPTION = "22"  # SQLSTATE class whose messages quote the offending value
_QUOTED = re.compile(r'"[^"]*"')


def one_line(text: str, limit: int = MAX_REASON_CHARS) -> str:
    printable = "".join(c if c.isprintable() else " " for c in text)
    joined = " ".join(printable.split())
    return joined if len(joined) <= limit else joined[: limit - 1] + "…"


def describe(error: BaseException) -> str:
    """The error's class and message; a driver error without SQLAlchemy's SQL dump
    and without the values PostgreSQL quotes (see `_server_said`)."""
    if isinstance(error, StatementError) and isinstance(error.orig, Exception):
        error = error.orig
    if isinstance(error, psycopg.Error) and error.diag.message_primary:
        return one_line(f"{type(error).__name__}: {_server_said(error.diag)}")
    return one_line(f"{type(error).__name__}: {error}")


def _server_said(diag: psycopg.errors.Diagnostic) -> str:
    """The server's primary message only: its DETAIL repeats the row or the key
    (`Key (email)=(ann@…)`), and a data exception's message quotes the value it
    refused — addresses and names that must not reach logs or dead letters."""
    primary = diag.message_primary or ""
    if (diag.sqlstate or "").startswith(DATA_EXCEPTION):
        primary = _QUOTED.sub('"…"', primary)
    return primary
