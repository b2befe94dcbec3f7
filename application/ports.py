"""What the application needs from the outside world, as protocols: every port here.

Each port speaks in values from the module of its area (an e-mail, a payment, an
answer, a notification's row); those modules import no port, so this one may
import them. Adapters implement these; `tests/ports/` holds a contract per port.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol
from uuid import UUID

from application.email import DeliveryStatus, OutgoingEmail, SendResult
from application.idempotency import Answer, Recorded, Request, RequestId
from application.notification_decision import State
from application.notification_record import Notification, NotificationRequest
from application.payment import Payment, PaymentStatus, Refund, RefundStatus
from application.purchase_emails import PurchaseFacts
from domain.student import StudentProfile

# -- students ------------------------------------------------------------------


class StudentDirectory(Protocol):
    """Where profiles live: mutable and erasable, unlike the event log."""

    def save(self, profile: StudentProfile) -> None: ...

    def get(self, student_id: str) -> StudentProfile | None: ...


# -- idempotent requests -------------------------------------------------------


class AnswerStore(Protocol):
    """Where answers live. Answers with events are written by the event store's
    recorder in the events' transaction (`save(..., answers=...)`); this port reads
    them, and stores the answers of requests that changed nothing."""

    def find(self, requests: Sequence[Request]) -> dict[RequestId, Recorded]: ...

    def record(
        self, answers: Sequence[tuple[Request, Answer]]
    ) -> dict[RequestId, Recorded]:
        """Store answers that come without events. Returns what is stored for each
        request: its own answer, or the first one if a racing attempt answered it."""
        ...


# -- e-mail and notifications --------------------------------------------------


class EmailProvider(Protocol):
    """Sends under an idempotency key derived from the event id, so every retry
    and redelivery of one notification names the same message."""

    def send(self, message: OutgoingEmail, idempotency_key: str) -> SendResult:
        """Raises one of the three `EmailSendError` subclasses on failure."""
        ...

    def status(self, idempotency_key: str) -> DeliveryStatus:
        """Raises only `TransientSendError` when the lookup itself fails (any
        status, any transport error): a failed lookup proves nothing either way."""
        ...


class NotificationStore(Protocol):
    def open(self, request: NotificationRequest) -> Notification:
        """The notification's row, created `pending` on first sight."""
        ...

    def open_sending(self, request: NotificationRequest) -> bool:
        """A first sight's row, created already `sending` at attempt 1 (committed
        when this returns): True. False, and nothing changed, when the
        notification was seen before."""
        ...

    def mark(
        self,
        event_id: UUID,
        state: State,
        *,
        attempts: int | None = None,
        error: str | None = None,
        provider_id: str | None = None,
    ) -> None:
        """Record a state (committed when this returns); `sent` stamps `sent_at`."""
        ...


class PurchaseLookup(Protocol):
    def facts(self, purchase_id: UUID) -> PurchaseFacts:
        """Raises NotFoundError for a purchase that was never recorded."""
        ...

    def bought(self, enrollment_id: UUID) -> bool:
        """Whether the enrollment is a purchase's seat (its access-granted e-mail
        already told the student; a second "you are enrolled" would repeat it)."""
        ...


# -- payments ------------------------------------------------------------------


class PaymentProvider(Protocol):
    """Every call carries an idempotency key that the caller keeps (recorded as an
    intent first), so a retry after any failure names the same charge or refund."""

    def charge(
        self, reference: str, amount_cents: int, idempotency_key: str
    ) -> Payment:
        """PENDING or CAPTURED; a decline raises `PaymentDeclinedError`, other
        failures one of the three `PaymentError` classes."""
        ...

    def status(self, idempotency_key: str) -> PaymentStatus:
        """Raises only `TransientPaymentError` when the lookup itself fails."""
        ...

    def refund(
        self, payment_id: str, amount_cents: int, idempotency_key: str
    ) -> Refund:
        """Raises one of the three `PaymentError` classes on failure."""
        ...

    def refund_status(self, idempotency_key: str) -> RefundStatus:
        """Raises only `TransientPaymentError` when the lookup itself fails."""
        ...


class WebhookRecords(Protocol):
    """Each provider event id once, with what its first delivery did."""

    def outcome_of(self, event_id: str) -> str | None:
        """The words kept with this event id; None: not seen yet."""
        ...

    def accept(
        self, *, event_id: str, type_: str, purchase_id: UUID | None, outcome: str
    ) -> str:
        """Keep the event id and wake its purchase, in one transaction; returns the
        words kept first (a racing redelivery may have written them)."""
        ...


# -- roster exports ------------------------------------------------------------


class StudentNames(Protocol):
    def names(self, student_ids: Sequence[str]) -> dict[str, str]:
        """Each known student's name; an erased profile is simply absent."""
        ...


class ExportFiles(Protocol):
    def write(
        self, export_id: UUID, header: Sequence[str], rows: Sequence[Sequence[str]]
    ) -> str:
        """Write the whole file, durably, under its final name; return that name.
        Raises OSError when it cannot (a full disk, a missing directory)."""
        ...
