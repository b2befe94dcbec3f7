"""The e-mail provider port over HTTP: the sandbox, or any provider of its shape.

`POST {base}/messages` with an `Idempotency-Key` header and `{to, subject, body}`
sends; `GET {base}/messages/{key}` looks a key up (404: nothing accepted). This
module only reports how far each request got; `application.email` decides the class:
a connection refused (or timed out while connecting, or no pooled connection free)
means nothing left, so it is transient; any failure after the request started to
leave (write or read error, read timeout, connection closed mid-response) may hide
an acceptance, so the outcome is unknown.
"""

from __future__ import annotations

import email.utils
from datetime import UTC, datetime
from urllib.parse import quote

import httpx

from adapters.providers.http_client import provider_client
from application.email import (
    DeliveryStatus,
    EmailSendError,
    OutcomeUnknownError,
    OutgoingEmail,
    SendResult,
    Stage,
    TransientSendError,
    check_key,
    classify_http_status,
    classify_transport,
)
from application.personal_data import without_addresses

NOT_FOUND = 404
# Raised before a byte of the request went out: the provider saw nothing.
NOTHING_SENT = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
    httpx.LocalProtocolError,
)


class HttpEmailProvider:
    def __init__(
        self,
        base_url: str,
        *,
        connect_timeout_s: float = 2.0,
        read_timeout_s: float = 10.0,
    ) -> None:
        self._client = provider_client(
            base_url,
            "CLUB_EMAIL_PROVIDER_URL",
            connect_timeout_s=connect_timeout_s,
            read_timeout_s=read_timeout_s,
        )

    def close(self) -> None:
        self._client.close()

    def send(self, message: OutgoingEmail, idempotency_key: str) -> SendResult:
        check_key(idempotency_key)
        body = {"to": message.to, "subject": message.subject, "body": message.body}
        response = self._request(
            "POST", "/messages", json=body, headers={"Idempotency-Key": idempotency_key}
        )
        if not response.is_success:
            raise _refusal(response)
        try:
            provider_id = response.json().get("id")
        except (ValueError, AttributeError):  # accepted all the same: 2xx says so
            provider_id = None
        return SendResult(
            provider_id=provider_id if isinstance(provider_id, str) else None,
            replayed=response.headers.get("Idempotent-Replayed") == "true",
        )

    def status(self, idempotency_key: str) -> DeliveryStatus:
        check_key(idempotency_key)
        try:
            response = self._request(
                "GET", f"/messages/{quote(idempotency_key, safe='')}"
            )
        except OutcomeUnknownError as error:  # a lookup changes nothing: ask again
            raise TransientSendError(str(error)) from error
        if response.status_code == NOT_FOUND:
            return DeliveryStatus.NOT_FOUND
        if not response.is_success:
            # The port promises one class for a failed lookup: nothing can be
            # concluded from it, whatever the status, so ask again later.
            refusal = _refusal(response)
            if isinstance(refusal, TransientSendError):
                raise refusal
            raise TransientSendError(f"status lookup failed: {refusal}") from refusal
        return DeliveryStatus.ACCEPTED

    def _request(
        self,
        method: str,
        path: str,
        json: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        try:
            return self._client.request(method, path, json=json, headers=headers)
        except NOTHING_SENT as error:
            raise classify_transport(Stage.NOT_SENT, _describe(error)) from error
        except httpx.TransportError as error:
            raise classify_transport(Stage.SENT, _describe(error)) from error


def _refusal(response: httpx.Response) -> EmailSendError:
    try:
        detail = str(response.json().get("detail") or response.reason_phrase)
    except (ValueError, AttributeError):
        detail = response.reason_phrase
    # A refusal may quote the recipient ("not an address: 'ann@...'"); the error's
    # text is stored and logged, the address is not (docs/guarantees.md).
    return classify_http_status(
        response.status_code,
        without_addresses(detail),
        _retry_after(response.headers.get("Retry-After")),
    )


def _retry_after(value: str | None) -> float | None:
    """RFC 9110: delay-seconds or an HTTP-date; None when absent or unreadable."""
    if value is None:
        return None
    if value.strip().isdigit():
        return float(value.strip())
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _describe(error: Exception) -> str:
    said = without_addresses(str(error))
    return f"{type(error).__name__}: {said}" if said else type(error).__name__
