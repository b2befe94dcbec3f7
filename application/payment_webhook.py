"""The payment provider's webhooks: the value Club reads, and their signatures.

Signed like Stripe's: `Club-Signature: t=<unix seconds>,v1=<hex>`, the HMAC-SHA256
of `f"{t}.{body}"` under the shared secret, refused when `t` is further from now
than the tolerance, so a captured webhook cannot be replayed later. Verify the
signature over the raw body first, then read it with `Webhook.from_json`; the use
case a parsed webhook goes through is `application.webhook_receipt.receive_webhook`.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import json
import time
from datetime import datetime

import attrs

from application.email import MAX_KEY_LENGTH, check_key
from application.provider_values import (
    UnusableAnswerError,
    UnusableWebhookError,
    provider_amount,
    provider_id,
    provider_time,
)

SIGNATURE_HEADER = "Club-Signature"
SIGNATURE_TOLERANCE_S = 300  # Stripe's default: five minutes either way


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
        """Raises `ValueError` naming what is wrong (verify the signature first):
        `UnusableWebhookError` when the envelope (id, type, our key) is readable
        but a value of the fact is not one Club can act on."""
        try:
            data = json.loads(body)
            event_id = _text(data["id"])
            kind = WebhookType(data["type"])
            key = check_key(data["idempotency_key"])
        except (KeyError, TypeError, AttributeError, RecursionError) as error:
            raise ValueError(f"not a payment webhook: {error!r}") from None
        try:
            refund_id = data.get("refund_id")
            webhook = cls(
                event_id=event_id,
                type=kind,
                payment_id=provider_id(data.get("payment_id"), "payment id"),
                idempotency_key=key,
                reference=provider_id(data.get("reference"), "reference"),
                amount_cents=provider_amount(data.get("amount_cents")),
                occurred_at=provider_time(data.get("occurred_at"), "occurred_at"),
                refund_id=None
                if refund_id is None
                else provider_id(refund_id, "refund id"),
            )
        except UnusableAnswerError as error:
            raise UnusableWebhookError(
                f"{kind.value} webhook {event_id}: {error}",
                event_id=event_id,
                idempotency_key=key,
            ) from None
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
        # ASCII digits only: str.isdigit() also takes "²", which int() refuses.
        if name == "t" and value.isascii() and value.isdigit() and len(value) <= 12:  # noqa: PLR2004
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
