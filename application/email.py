"""The e-mail provider port: what Club sends, what comes back, and how failures rank.

Every adapter reports *what happened* (an HTTP status, an SMTP reply code, or how far
a request got before the transport failed); the functions here decide, in one place,
which of the three classes that is, because the worker's next step depends on it:

- `PermanentSendError`: the provider refused this message; retrying cannot help.
- `TransientSendError`: nothing was accepted; retrying later can help
  (`retry_after` is the provider's own hint, obeyed when given).
- `OutcomeUnknownError`: the request left, no answer came back; the provider may
  have accepted it. Reconcile through `status()` before any resend.
"""

from __future__ import annotations

import enum

import attrs

MAX_KEY_LENGTH = 255
_FORBIDDEN_IN_HEADERS = ("\r", "\n", "\x00")


def _no_line_breaks(
    _instance: object, attribute: attrs.Attribute[str], value: str
) -> None:
    # A CR or LF in a header value would let a message body forge headers.
    if any(c in value for c in _FORBIDDEN_IN_HEADERS):
        raise ValueError(f"{attribute.name} must not contain CR, LF or NUL")


def _not_empty(_instance: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not value.strip():
        raise ValueError(f"{attribute.name} must not be empty")


def _no_nul(_instance: object, attribute: attrs.Attribute[str], value: str) -> None:
    if "\x00" in value:
        raise ValueError(f"{attribute.name} must not contain NUL")


@attrs.frozen(kw_only=True)
class OutgoingEmail:
    """One plain-text message to one recipient."""

    to: str = attrs.field(validator=[_not_empty, _no_line_breaks])
    subject: str = attrs.field(validator=_no_line_breaks)
    body: str = attrs.field(validator=_no_nul)


@attrs.frozen(kw_only=True)
class SendResult:
    """The provider accepted the message (now, or on an earlier try: `replayed`)."""

    provider_id: str | None  # the provider's own id, if it gives one
    replayed: bool = False


class DeliveryStatus(enum.Enum):
    ACCEPTED = "accepted"  # the provider holds a message under this key
    NOT_FOUND = "not-found"  # the provider checked: nothing was accepted under it
    UNKNOWN = "unknown"  # the provider cannot say (SMTP has no lookup): decide


class EmailSendError(Exception):
    """A send did not end in a known acceptance; the subclass says what to do."""


class PermanentSendError(EmailSendError):
    """Refused for good (a 4xx, a refused address): dead-letter it."""


class TransientSendError(EmailSendError):
    """Nothing was accepted; try again later, not before `retry_after` seconds.
    `throttled`: the provider is up and asks us to slow down (429), which says
    nothing of an outage (its circuit does not count it)."""

    def __init__(
        self, reason: str, retry_after: float | None = None, *, throttled: bool = False
    ) -> None:
        super().__init__(reason)
        self.retry_after = retry_after
        self.throttled = throttled


class OutcomeUnknownError(EmailSendError):
    """The request left and no answer came: look the key up before resending."""


class Stage(enum.Enum):
    """How far a request got when its transport failed."""

    NOT_SENT = "not-sent"  # e.g. connection refused: the provider saw nothing
    SENT = "sent"  # the request (or part of it) left: it may have been acted on


REQUEST_TIMEOUT = 408  # the server gave up waiting for our request: nothing done
KEY_IN_FLIGHT = 409  # IETF Idempotency-Key draft: a request with this key is running
TOO_MANY_REQUESTS = 429


def classify_http_status(
    status: int, detail: str, retry_after: float | None = None
) -> EmailSendError:
    """The class of an HTTP answer that is not a 2xx."""
    reason = f"provider answered {status}: {detail}"
    if status == TOO_MANY_REQUESTS:
        return TransientSendError(reason, retry_after, throttled=True)
    if status == REQUEST_TIMEOUT or status >= 500:  # noqa: PLR2004
        return TransientSendError(reason, retry_after)
    if status == KEY_IN_FLIGHT:  # an earlier try may be accepting it right now
        return OutcomeUnknownError(reason)
    return PermanentSendError(reason)


def classify_smtp_reply(code: int, detail: str) -> EmailSendError:
    """RFC 5321: 4yz is a transient negative reply, 5yz a permanent one."""
    reason = f"SMTP server replied {code}: {detail}"
    if 400 <= code < 500:  # noqa: PLR2004 - the 4yz range
        return TransientSendError(reason)
    return PermanentSendError(reason)


def classify_transport(stage: Stage, detail: str) -> EmailSendError:
    """A transport failure: only one before anything left is safe to retry blindly."""
    if stage is Stage.NOT_SENT:
        return TransientSendError(f"provider not reached: {detail}")
    return OutcomeUnknownError(f"no answer after the request left: {detail}")


def check_key(key: str) -> str:
    """Keys are visible ASCII (no spaces), 1-255 characters, as providers accept."""
    if not 1 <= len(key) <= MAX_KEY_LENGTH or not all("!" <= c <= "~" for c in key):
        raise ValueError(
            f"an idempotency key is 1-{MAX_KEY_LENGTH} visible ASCII characters"
        )
    return key
