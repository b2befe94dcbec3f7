"""What Club accepts from the payment provider, checked where an answer comes in.

A provider's answer is as untrusted as a request: an id with a control character
or an unpaired surrogate cannot be stored, one of 10,000 characters is nobody's id,
an amount of `"100"` or `true` cents is a bug. A value the saga cannot act on
raises `UnusableAnswerError`: the call was answered, so money may have moved, and
retrying cannot change what the provider said — the purchase goes to a person
with the reason. Free text (a decline reason, a problem's detail) is never
refused, only made storable.
"""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime

from application.payment_amount import MAX_AMOUNT_CENTS

MAX_ID_LENGTH = 255  # what providers document for their ids and keys
MAX_TEXT_LENGTH = 200  # a decline reason or detail kept in an event
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
LATEST = datetime(2100, 1, 1, tzinfo=UTC)


class UnusableAnswerError(ValueError):
    """The provider answered something the saga cannot act on; a person decides."""


class UnusableWebhookError(UnusableAnswerError):
    """A signed webhook whose envelope names a key of ours, and whose fact's values
    Club cannot act on: the purchase the key names goes to a person."""

    def __init__(self, reason: str, *, event_id: str, idempotency_key: str) -> None:
        super().__init__(reason)
        self.event_id = event_id
        self.idempotency_key = idempotency_key


def provider_id(value: object, name: str) -> str:
    """An id as sent (a space or a non-ASCII letter is fine: Club only stores it
    and sends it back), or `UnusableAnswerError` naming what is wrong."""
    if not isinstance(value, str):
        raise UnusableAnswerError(
            f"the provider's {name} is not a text: {_shown(value)}"
        )
    if not value.strip():
        raise UnusableAnswerError(f"the provider's {name} is empty")
    if len(value) > MAX_ID_LENGTH:
        raise UnusableAnswerError(
            f"the provider's {name} has {len(value)} characters "
            f"(at most {MAX_ID_LENGTH}): {_shown(value)}"
        )
    if any(unicodedata.category(c) in {"Cc", "Cs"} for c in value):
        raise UnusableAnswerError(
            f"the provider's {name} holds a control character or an unpaired "
            f"surrogate: {_shown(value)}"
        )
    return value


def provider_amount(value: object, name: str = "amount_cents") -> int:
    # bool is an int in Python: `true` cents is a bug, not one cent.
    if isinstance(value, bool) or not isinstance(value, int):
        raise UnusableAnswerError(
            f"the provider's {name} is not a whole number of cents: {_shown(value)}"
        )
    if not 1 <= value <= MAX_AMOUNT_CENTS:
        raise UnusableAnswerError(
            f"the provider's {name} {_shown(value)} is outside 1-{MAX_AMOUNT_CENTS}"
        )
    return value


def provider_time(value: object, name: str) -> datetime:
    """An RFC 3339 time with its zone, between 2000 and 2100."""
    if not isinstance(value, str) or len(value) > 64:  # noqa: PLR2004
        raise UnusableAnswerError(
            f"the provider's {name} is not a time: {_shown(value)}"
        )
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise UnusableAnswerError(
            f"the provider's {name} is not a time: {_shown(value)}"
        ) from None
    if when.tzinfo is None:
        raise UnusableAnswerError(f"the provider's {name} has no time zone: {value}")
    if not EARLIEST <= when < LATEST:
        raise UnusableAnswerError(f"the provider's {name} is out of range: {value}")
    return when


def provider_text(value: object, fallback: str) -> str:
    """Free text made storable: control characters and unpaired surrogates become
    U+FFFD, and it is cut to `MAX_TEXT_LENGTH`."""
    if not isinstance(value, str) or not value.strip():
        return fallback
    clean = "".join(
        "\ufffd" if unicodedata.category(c) in {"Cc", "Cs"} else c
        for c in value[:MAX_TEXT_LENGTH]
    )
    return clean if len(value) <= MAX_TEXT_LENGTH else f"{clean}…"


def _shown(value: object) -> str:
    """The value for a reason a person reads: quoted, escaped, at most 80 chars."""
    text = ascii(value)
    return text if len(text) <= 80 else f"{text[:77]}..."  # noqa: PLR2004
