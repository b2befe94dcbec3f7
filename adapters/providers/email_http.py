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

from urllib.parse import quote

from urllib3.response import BaseHTTPResponse

from adapters.providers.http_client import (
    ProviderPool,
    TransportFailedError,
    described,
    json_answer,
    json_body,
    reason_phrase,
    retry_after,
    succeeded,
)
from application.email import (
    DeliveryStatus,
    EmailSendError,
    OutcomeUnknownError,
    OutgoingEmail,
    SendResult,
    TransientSendError,
    check_key,
    classify_http_status,
    classify_transport,
)
from application.personal_data import without_addresses

NOT_FOUND = 404
# The worker's threads call one provider at once (8 slots + 4 in entrypoints):
# each finds a connection without waiting.
CONNECTIONS = 16


class HttpEmailProvider:
    def __init__(
        self,
        base_url: str,
        *,
        connect_timeout_s: float = 2.0,
        read_timeout_s: float = 10.0,
        connections: int = CONNECTIONS,
    ) -> None:
        self._pool = ProviderPool(
            base_url,
            "CLUB_EMAIL_PROVIDER_URL",
            connect_timeout_s=connect_timeout_s,
            read_timeout_s=read_timeout_s,
            connections=connections,
        )

    def close(self) -> None:
        self._pool.close()

    def send(self, message: OutgoingEmail, idempotency_key: str) -> SendResult:
        check_key(idempotency_key)
        body = {"to": message.to, "subject": message.subject, "body": message.body}
        response = self._request(
            "POST",
            "/messages",
            json_body(body),
            {"Content-Type": "application/json", "Idempotency-Key": idempotency_key},
        )
        if not succeeded(response):
            raise _refusal(response)
        try:
            provider_id = json_answer(response).get("id")
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
        if response.status == NOT_FOUND:
            return DeliveryStatus.NOT_FOUND
        if not succeeded(response):
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
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> BaseHTTPResponse:
        try:
            return self._pool.request(method, path, body, headers)
        except TransportFailedError as failed:
            raise classify_transport(failed.stage, described(failed)) from failed


def _refusal(response: BaseHTTPResponse) -> EmailSendError:
    phrase = reason_phrase(response)
    try:
        detail = str(json_answer(response).get("detail") or phrase)
    except (ValueError, AttributeError):
        detail = phrase
    # A refusal may quote the recipient ("not an address: 'ann@...'"); the error's
    # text is stored and logged, the address is not (docs/guarantees.md).
    return classify_http_status(
        response.status,
        without_addresses(detail),
        retry_after(response.headers.get("Retry-After")),
    )
