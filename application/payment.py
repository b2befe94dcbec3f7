"""The payment provider port: charges, refunds, lookups, and how failures rank.

As with e-mail (`application.email`), adapters only report *what happened* (an HTTP
status, a decline reason, how far a request got); the functions here decide, in one
place, which class that is, because the saga's next step depends on it:

- `PermanentPaymentError`: refused for good (a decline, a 4xx); retrying cannot help.
  `PaymentDeclinedError` is the decline, with the provider's reason.
- `TransientPaymentError`: nothing was accepted; retry later (`retry_after` is the
  provider's own hint).
- `PaymentOutcomeUnknownError`: the request left and no answer came back; money may
  have moved. Look the key up (`status`, `refund_status`) before anything else.

Webhooks are signed like Stripe's: `Club-Signature: t=<unix seconds>,v1=<hex>`, the
HMAC-SHA256 of `f"{t}.{body}"` under the shared secret, and refused when `t` is
older than the tolerance, so a captured webhook cannot be replayed later.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import json
import time
from datetime import datetime
from typing import Protocol

import attrs

from application.email import MAX_KEY_LENGTH, Stage, check_key

__all__ = ["MAX_KEY_LENGTH", "Stage", "check_key"]  # re-exported for adapters

SIGNATURE_HEADER = "Club-Signature"
SIGNATURE_TOLERANCE_S = 300  # Stripe's default: five minutes either way
MAX_AMOUNT_CENTS = 10**10  # a hundred million in any currency: more is a mistake


class PaymentStatus(enum.Enum):
    PENDING = "pending"  # accepted; the money has not moved yet
    CAPTURED = "captured"
    DECLINED = "declined"
    NOT_FOUND = "not-found"  # the provider checked: nothing under this key


class RefundStatus(enum.Enum):
    PENDING = "pending"  # accepted; the provider confirms by webhook
    SUCCEEDED = "succeeded"
    NOT_FOUND = "not-found"


@attrs.frozen(kw_only=True)
class Payment:
    """A charge the provider holds (now, or on an earlier try: `replayed`)."""

    payment_id: str
    status: PaymentStatus
    amount_cents: int
    replayed: bool = False


@attrs.frozen(kw_only=True)
class Refund:
    refund_id: str
    payment_id: str
    status: RefundStatus
    amount_cents: int
    replayed: bool = False


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


class PaymentError(Exception):
    """A call did not end in a known answer; the subclass says what to do."""


class PermanentPaymentError(PaymentError):
    """Refused for good: retrying the same request cannot help."""


class PaymentDeclinedError(PermanentPaymentError):
    def __init__(self, reason: str, payment_id: str | None = None) -> None:
        super().__init__(f"payment declined: {reason}")
        self.decline_reason = reason
        self.payment_id = payment_id


class TransientPaymentError(PaymentError):
    """Nothing was accepted; try again, not before `retry_after` seconds."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


class PaymentOutcomeUnknownError(PaymentError):
    """The request left and no answer came: look the key up before anything else."""


REQUEST_TIMEOUT = 408
KEY_IN_FLIGHT = 409  # IETF Idempotency-Key draft: a request with this key is running
TOO_MANY_REQUESTS = 429
PAYMENT_REQUIRED = 402  # what providers answer for a declined card


def classify_http_status(
    status: int,
    detail: str,
    retry_after: float | None = None,
    *,
    decline_reason: str | None = None,
    payment_id: str | None = None,
) -> PaymentError:
    """The class of an HTTP answer that is not a 2xx."""
    reason = f"provider answered {status}: {detail}"
    if status in (REQUEST_TIMEOUT, TOO_MANY_REQUESTS) or status >= 500:  # noqa: PLR2004
        return TransientPaymentError(reason, retry_after)
    if status == KEY_IN_FLIGHT:  # an earlier try may be charging right now
        return PaymentOutcomeUnknownError(reason)
    if status == PAYMENT_REQUIRED:
        return PaymentDeclinedError(decline_reason or detail, payment_id)
    return PermanentPaymentError(reason)


def classify_transport(stage: Stage, detail: str) -> PaymentError:
    """Only a failure before anything left is safe to retry blindly."""
    if stage is Stage.NOT_SENT:
        return TransientPaymentError(f"provider not reached: {detail}")
    return PaymentOutcomeUnknownError(f"no answer after the request left: {detail}")


def check_amount(amount_cents: int) -> int:
    # bool is an int: `True` cents is a bug, not one cent.
    if (
        isinstance(amount_cents, bool)
        or not isinstance(amount_cents, int)
        or not 1 <= amount_cents <= MAX_AMOUNT_CENTS
    ):
        raise ValueError(f"an amount is a whole number of cents, 1-{MAX_AMOUNT_CENTS}")
    return amount_cents


class WebhookType(enum.Enum):
    PAYMENT_CAPTURED = "payment.captured"
    PAYMENT_DECLINED = "payment.declined"
    REFUND_SUCCEEDED = "refund.succeeded"


@attrs.frozen(kw_only=True)
class Webhook:
    """One event the provider reports; `event_id` is the same on every redelivery."""

    event_id: str
    type: WebhookType
    payment_id: str
    idempotency_key: str  # the charge's key (Club's, so it finds its purchase)
    reference: str
    amount_cents: int
    occurred_at: datetime = attrs.field()
    refund_id: str | None = None

    @occurred_at.validator
    def _aware(self, _attribute: attrs.Attribute[datetime], value: datetime) -> None:
        if value.tzinfo is None:
            raise ValueError("occurred_at must carry a time zone")

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "id": self.event_id,
                "type": self.type.value,
                "payment_id": self.payment_id,
                "idempotency_key": self.idempotency_key,
                "reference": self.reference,
                "amount_cents": self.amount_cents,
                "occurred_at": self.occurred_at.isoformat(),
                "refund_id": self.refund_id,
            },
            separators=(",", ":"),
        ).encode()

    @classmethod
    def from_json(cls, body: bytes) -> Webhook:
        """Raises `ValueError` naming what is wrong (verify the signature first)."""
        try:
            data = json.loads(body)
            refund_id = data.get("refund_id")
            webhook = cls(
                event_id=_text(data["id"]),
                type=WebhookType(data["type"]),
                payment_id=_text(data["payment_id"]),
                idempotency_key=check_key(data["idempotency_key"]),
                reference=_text(data["reference"]),
                amount_cents=check_amount(data["amount_cents"]),
                occurred_at=datetime.fromisoformat(data["occurred_at"]),
                refund_id=None if refund_id is None else _text(refund_id),
            )
        except (KeyError, TypeError, AttributeError, RecursionError) as error:
            raise ValueError(f"not a payment webhook: {error!r}") from None
        return webhook


def _text(value: object) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_KEY_LENGTH:
        raise ValueError(f"expected a text of 1-{MAX_KEY_LENGTH} characters")
    if "\x00" in value:
        raise ValueError("a text must not contain NUL")
    return value


def sign(secret: str, body: bytes, timestamp: int) -> str:
    """The `Club-Signature` header value for `body` sent at `timestamp`."""
    return f"t={timestamp},v1={_digest(secret, body, timestamp)}"


def verify_signature(
    secret: str,
    body: bytes,
    header: str | None,
    *,
    now: float | None = None,
    tolerance_s: float = SIGNATURE_TOLERANCE_S,
) -> bool:
    """True only for a header made by `sign` with this secret, this exact body, and
    a timestamp within `tolerance_s` of `now`. Several v1= values are allowed
    (a secret being rotated); any match is enough."""
    if not header or not secret:
        return False
    timestamp: int | None = None
    candidates: list[str] = []
    for part in header.split(","):
        name, _, value = part.strip().partition("=")
        if name == "t" and value.isdigit() and len(value) <= 12:  # noqa: PLR2004
            timestamp = int(value)
        elif name == "v1":
            candidates.append(value)
    if timestamp is None or not candidates:
        return False
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance_s:
        return False
    expected = _digest(secret, body, timestamp)
    # compare_digest on every candidate: timing reveals nothing about the secret.
    return any(
        hmac.compare_digest(expected.encode(), c.encode("utf-8", "replace"))
        for c in candidates
    )


def _digest(secret: str, body: bytes, timestamp: int) -> str:
    signed = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
