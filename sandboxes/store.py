"""The e-mail sandbox's accepted messages, by idempotency key, in one SQLite file.

A provider's idempotency promise must outlive its restarts: a client that lost an
answer may retry after the provider came back, and must get the first result. WAL
with synchronous=NORMAL survives a killed process (not a power cut: a sandbox).
One process owns the file: all calls come from the server's event loop thread.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from uuid import uuid4

import attrs

SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    idempotency_key TEXT NOT NULL UNIQUE,
    id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    recipient TEXT NOT NULL,
    subject TEXT NOT NULL,
    body TEXT NOT NULL,
    accepted_at REAL NOT NULL
)
"""
COLUMNS = "idempotency_key, id, fingerprint, recipient, subject, body, accepted_at"


@attrs.frozen(kw_only=True)
class StoredMessage:
    idempotency_key: str
    id: str
    fingerprint: str  # a hash of the request body: the same key with another body
    recipient: str
    subject: str
    body: str
    accepted_at: float  # unix seconds: the instant the rate limit counted

    def as_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "idempotency_key": self.idempotency_key,
            "status": "accepted",
            "to": self.recipient,
            "subject": self.subject,
            "body": self.body,
            "accepted_at": datetime.fromtimestamp(self.accepted_at, UTC).isoformat(),
        }


class MessageStore:
    def __init__(self, data_dir: Path) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(data_dir / "email-sandbox.sqlite3")
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(SCHEMA)
        self._db.commit()

    def close(self) -> None:
        self._db.close()

    def find(self, key: str) -> StoredMessage | None:
        row = self._db.execute(
            f"SELECT {COLUMNS} FROM messages WHERE idempotency_key = ?",  # noqa: S608
            (key,),
        ).fetchone()
        return None if row is None else _message(row)

    def accept(
        self, *, key: str, fingerprint: str, recipient: str, subject: str, body: str,
        accepted_at: float,
    ) -> StoredMessage:  # fmt: skip
        message = StoredMessage(
            idempotency_key=key, id=f"msg_{uuid4().hex}", fingerprint=fingerprint,
            recipient=recipient, subject=subject, body=body, accepted_at=accepted_at,
        )  # fmt: skip
        with self._db:  # commits before the answer leaves: accepted means stored
            self._db.execute(
                f"INSERT INTO messages ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",  # noqa: S608
                attrs.astuple(message),
            )
        return message

    def newest(self, limit: int, offset: int = 0) -> list[StoredMessage]:
        rows = self._db.execute(
            f"SELECT {COLUMNS} FROM messages ORDER BY seq DESC LIMIT ? OFFSET ?",  # noqa: S608
            (limit, offset),
        ).fetchall()
        return [_message(row) for row in rows]

    def count(self) -> int:
        [(total,)] = self._db.execute("SELECT count(*) FROM messages").fetchall()
        return int(total)

    def accepted_since(self, since: float) -> list[float]:
        rows = self._db.execute(
            "SELECT accepted_at FROM messages WHERE accepted_at > ? ORDER BY seq",
            (since,),
        ).fetchall()
        return [float(at) for (at,) in rows]


def _message(row: tuple[str, str, str, str, str, str, float]) -> StoredMessage:
    key, id_, fingerprint, recipient, subject, body, accepted_at = row
    return StoredMessage(
        idempotency_key=key, id=id_, fingerprint=fingerprint, recipient=recipient,
        subject=subject, body=body, accepted_at=accepted_at,
    )  # fmt: skip
