"""The payment sandbox's payments, refunds and webhook outbox, in one SQLite file.

A provider's idempotency promise outlives its restarts, and so do its duties: a
payment accepted before a SIGKILL still settles afterwards and its webhook is still
delivered, because settling and queueing the webhook commit in one transaction and
the delivery loop reads the queue (a transactional outbox, as Club's own relay).
WAL with synchronous=NORMAL survives a killed process. One process owns the file:
every call comes from the server's event loop thread.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from uuid import uuid4

import attrs

from sandboxes.payment_outbox import OutgoingWebhook, WebhookOutbox

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS payments (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        idempotency_key TEXT NOT NULL UNIQUE, id TEXT NOT NULL UNIQUE,
        fingerprint TEXT NOT NULL, reference TEXT NOT NULL,
        amount_cents INTEGER NOT NULL, status TEXT NOT NULL, decline_reason TEXT,
        created_at REAL NOT NULL, settle_at REAL, settled_at REAL)""",
    """CREATE TABLE IF NOT EXISTS refunds (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        idempotency_key TEXT NOT NULL UNIQUE, id TEXT NOT NULL UNIQUE,
        fingerprint TEXT NOT NULL, payment_id TEXT NOT NULL,
        amount_cents INTEGER NOT NULL, status TEXT NOT NULL,
        created_at REAL NOT NULL, settle_at REAL, settled_at REAL)""",
)
PAYMENT_COLUMNS = (
    "idempotency_key, id, fingerprint, reference, amount_cents, status, "
    "decline_reason, created_at, settle_at, settled_at"
)
REFUND_COLUMNS = (
    "idempotency_key, id, fingerprint, payment_id, amount_cents, status, "
    "created_at, settle_at, settled_at"
)


@attrs.frozen(kw_only=True)
class StoredPayment:
    idempotency_key: str
    id: str
    fingerprint: str  # a hash of the request body: the same key with another body
    reference: str
    amount_cents: int
    status: str  # pending | captured | declined
    decline_reason: str | None
    created_at: float
    settle_at: float | None  # when a pending payment captures
    settled_at: float | None


@attrs.frozen(kw_only=True)
class StoredRefund:
    idempotency_key: str
    id: str
    fingerprint: str
    payment_id: str
    amount_cents: int
    status: str  # pending | succeeded
    created_at: float
    settle_at: float | None
    settled_at: float | None


class PaymentStore:
    def __init__(self, data_dir: Path) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(data_dir / "payment-sandbox.sqlite3")
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        for statement in SCHEMA:
            self._db.execute(statement)
        self.outbox = WebhookOutbox(self._db)  # shares the connection: one commit
        self._db.commit()

    def close(self) -> None:
        self._db.close()

    # --- payments -------------------------------------------------------------

    def payment_by_key(self, key: str) -> StoredPayment | None:
        return self._one_payment("idempotency_key = ?", key)

    def payment_by_id(self, payment_id: str) -> StoredPayment | None:
        return self._one_payment("id = ?", payment_id)

    def add_payment(
        self, *, key: str, fingerprint: str, reference: str, amount_cents: int,
        status: str, decline_reason: str | None, now: float, settle_at: float | None,
        webhook: Callable[[StoredPayment], OutgoingWebhook] | None,
        payment_id: str | None = None,
    ) -> StoredPayment:  # fmt: skip
        payment = StoredPayment(
            idempotency_key=key, id=payment_id or f"pay_{uuid4().hex}",
            fingerprint=fingerprint,
            reference=reference, amount_cents=amount_cents, status=status,
            decline_reason=decline_reason, created_at=now, settle_at=settle_at,
            settled_at=None if status == "pending" else now,
        )  # fmt: skip
        with self._db:  # commits before the answer leaves: accepted means stored
            self._db.execute(
                f"INSERT INTO payments ({PAYMENT_COLUMNS}) "  # noqa: S608
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                attrs.astuple(payment),
            )
            if webhook is not None:  # settled at once: its webhook in the same commit
                self.outbox.queue(webhook(payment), now)
        return payment

    def newest_payments(self, limit: int, offset: int) -> list[StoredPayment]:
        rows = self._db.execute(
            f"SELECT {PAYMENT_COLUMNS} FROM payments "  # noqa: S608
            "ORDER BY seq DESC LIMIT ? OFFSET ?",
            (limit, offset),
        ).fetchall()
        return [_payment(r) for r in rows]

    def count_payments(self) -> int:
        [(total,)] = self._db.execute("SELECT count(*) FROM payments").fetchall()
        return int(total)

    def due_payments(self, now: float) -> list[StoredPayment]:
        rows = self._db.execute(
            f"SELECT {PAYMENT_COLUMNS} FROM payments "  # noqa: S608
            "WHERE status = 'pending' AND settle_at <= ? ORDER BY seq",
            (now,),
        ).fetchall()
        return [_payment(r) for r in rows]

    def _one_payment(self, where: str, value: str) -> StoredPayment | None:
        row = self._db.execute(
            f"SELECT {PAYMENT_COLUMNS} FROM payments WHERE {where}",  # noqa: S608
            (value,),
        ).fetchone()
        return None if row is None else _payment(row)

    def accepted_since(self, since: float) -> list[float]:
        """When each charge and refund after `since` was accepted: the rate window."""
        rows = self._db.execute(
            "SELECT created_at FROM payments WHERE created_at > ? "
            "UNION ALL SELECT created_at FROM refunds WHERE created_at > ?",
            (since, since),
        ).fetchall()
        return [float(at) for (at,) in rows]

    # --- refunds --------------------------------------------------------------

    def refund_by_key(self, key: str) -> StoredRefund | None:
        row = self._db.execute(
            f"SELECT {REFUND_COLUMNS} FROM refunds WHERE idempotency_key = ?",  # noqa: S608
            (key,),
        ).fetchone()
        return None if row is None else _refund(row)

    def refunds_of(self, payment_id: str) -> list[StoredRefund]:
        rows = self._db.execute(
            f"SELECT {REFUND_COLUMNS} FROM refunds "  # noqa: S608
            "WHERE payment_id = ? ORDER BY seq",
            (payment_id,),
        ).fetchall()
        return [_refund(r) for r in rows]

    def add_refund(
        self, *, key: str, fingerprint: str, payment_id: str, amount_cents: int,
        now: float, settle_at: float | None,
        webhook: Callable[[StoredRefund], OutgoingWebhook] | None,
    ) -> StoredRefund:  # fmt: skip
        refund = StoredRefund(
            idempotency_key=key, id=f"re_{uuid4().hex}", fingerprint=fingerprint,
            payment_id=payment_id, amount_cents=amount_cents,
            status="pending" if settle_at is not None else "succeeded",
            created_at=now, settle_at=settle_at,
            settled_at=None if settle_at is not None else now,
        )  # fmt: skip
        with self._db:
            self._db.execute(
                f"INSERT INTO refunds ({REFUND_COLUMNS}) "  # noqa: S608
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                attrs.astuple(refund),
            )
            if webhook is not None:
                self.outbox.queue(webhook(refund), now)
        return refund

    def due_refunds(self, now: float) -> list[StoredRefund]:
        rows = self._db.execute(
            f"SELECT {REFUND_COLUMNS} FROM refunds "  # noqa: S608
            "WHERE status = 'pending' AND settle_at <= ? ORDER BY seq",
            (now,),
        ).fetchall()
        return [_refund(r) for r in rows]

    # --- settling and the webhook outbox ---------------------------------------

    def settle(
        self, table: str, row_id: str, status: str, now: float,
        webhook: OutgoingWebhook,
    ) -> None:  # fmt: skip
        """The new status and its webhook commit together: never one without the
        other, whenever the process dies."""
        if table not in ("payments", "refunds"):
            raise ValueError(table)
        with self._db:
            self._db.execute(
                f"UPDATE {table} SET status = ?, settled_at = ? WHERE id = ?",  # noqa: S608
                (status, now, row_id),
            )
            self.outbox.queue(webhook, now)


def _names(columns: str) -> list[str]:
    return [c.strip() for c in columns.split(",")]


def _payment(row: tuple[object, ...]) -> StoredPayment:
    return StoredPayment(**dict(zip(_names(PAYMENT_COLUMNS), row, strict=True)))  # type: ignore[arg-type]


def _refund(row: tuple[object, ...]) -> StoredRefund:
    return StoredRefund(**dict(zip(_names(REFUND_COLUMNS), row, strict=True)))  # type: ignore[arg-type]
