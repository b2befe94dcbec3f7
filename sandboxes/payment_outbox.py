"""The payment sandbox's webhook outbox: what is owed to Club, and how each delivery
went. It shares the store's SQLite connection, so a webhook is queued in the very
transaction that changes a payment's status; the store commits, never this class's
`queue`."""

from __future__ import annotations

import json
import sqlite3

import attrs

SCHEMA = """CREATE TABLE IF NOT EXISTS webhooks (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, event_id TEXT NOT NULL UNIQUE,
    body BLOB NOT NULL, created_at REAL NOT NULL, due_at REAL NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0, delivered_at REAL, gave_up_at REAL,
    last_error TEXT)"""


@attrs.frozen(kw_only=True)
class OutgoingWebhook:
    event_id: str
    body: bytes
    due_at: float  # not before: the webhook_delay_ms knob


@attrs.frozen(kw_only=True)
class QueuedWebhook:
    seq: int
    event_id: str
    body: bytes
    created_at: float
    attempts: int


class WebhookOutbox:
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._db.execute(SCHEMA)

    def queue(self, webhook: OutgoingWebhook, now: float) -> None:
        self._db.execute(
            "INSERT INTO webhooks (event_id, body, created_at, due_at) "
            "VALUES (?, ?, ?, ?)",
            (webhook.event_id, webhook.body, now, webhook.due_at),
        )

    def due(self, now: float) -> list[QueuedWebhook]:
        rows = self._db.execute(
            "SELECT seq, event_id, body, created_at, attempts FROM webhooks "
            "WHERE delivered_at IS NULL AND gave_up_at IS NULL AND due_at <= ? "
            "ORDER BY seq",
            (now,),
        ).fetchall()
        return [
            QueuedWebhook(seq=s, event_id=e, body=bytes(b), created_at=c, attempts=a)
            for s, e, b, c, a in rows
        ]

    def undelivered_count(self) -> int:
        [(total,)] = self._db.execute(
            "SELECT count(*) FROM webhooks "
            "WHERE delivered_at IS NULL AND gave_up_at IS NULL"
        ).fetchall()
        return int(total)

    def delivered(self, seq: int, now: float) -> None:
        with self._db:
            self._db.execute(
                "UPDATE webhooks SET delivered_at = ?, attempts = attempts + 1 "
                "WHERE seq = ?",
                (now, seq),
            )

    def failed(self, seq: int, error: str, retry_at: float | None, now: float) -> None:
        """`retry_at` None: the attempts are used up; the webhook is given up."""
        with self._db:
            self._db.execute(
                "UPDATE webhooks SET attempts = attempts + 1, last_error = ?, "
                "due_at = coalesce(?, due_at), gave_up_at = ? WHERE seq = ?",
                (error, retry_at, None if retry_at is not None else now, seq),
            )

    def log(self, limit: int) -> list[dict[str, object]]:
        rows = self._db.execute(
            "SELECT body, attempts, delivered_at, gave_up_at, last_error "
            "FROM webhooks ORDER BY seq DESC LIMIT ?",
            (limit,),
        ).fetchall()
        return [
            {"payload": json.loads(body), "attempts": attempts,
             "delivered_at": delivered, "gave_up_at": gave_up, "last_error": error}
            for body, attempts, delivered, gave_up, error in rows
        ]  # fmt: skip
