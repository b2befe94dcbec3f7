"""The payment provider port over HTTP: the sandbox, or any provider of its shape.

`POST {base}/payments` `{reference, amount_cents}` charges and `POST {base}/refunds`
`{payment_id, amount_cents}` refunds, each under an `Idempotency-Key` header;
`GET {base}/payments/{key}` and `GET {base}/refunds/{key}` look a key up (404:
nothing under it). A decline is `402` with `decline_reason` and `payment_id`.
This module only reports how far each request got and what came back;
`application.payment` decides the class, exactly as for e-mail: refused before
anything left is transient, anything after the request started to leave may hide
a charge, so the outcome is unknown. Every value an answer carries is checked here
(`application.provider_values`): an id, amount or key the saga cannot act on is an
`UnusableAnswerError`, which sends the purchase to a person with the reason.
"""

from __future__ import annotations

from typing import Any, TypeVar
from urllib.parse import quote

from urllib3.response import BaseHTTPResponse

# The same client as the e-mail adapter's: one reading of how far a request got.
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
from application.payment import (
    Payment,
    PaymentError,
    PaymentOutcomeUnknownError,
    PaymentStatus,
    Refund,
    RefundStatus,
    TransientPaymentError,
    check_amount,
    check_key,
    classify_http_status,
    classify_transport,
)
from application.provider_values import (
    UnusableAnswerError,
    provider_amount,
    provider_id,
    provider_text,
)

S = TypeVar("S", PaymentStatus, RefundStatus)
NOT_FOUND = 404
CHARGED = {"pending": PaymentStatus.PENDING, "captured": PaymentStatus.CAPTURED}
LOOKED_UP = CHARGED | {"declined": PaymentStatus.DECLINED}
REFUNDED = {"pending": RefundStatus.PENDING, "succeeded": RefundStatus.SUCCEEDED}
# The saga calls from a handful of threads; money moves at human speed.
CONNECTIONS = 4


class HttpPaymentProvider:
    def __init__(
        self,
        base_url: str,
        *,
        connect_timeout_s: float = 2.0,
        read_timeout_s: float = 10.0,
    ) -> None:
        self._pool = ProviderPool(
            base_url,
            "CLUB_PAYMENT_PROVIDER_URL",
            connect_timeout_s=connect_timeout_s,
            read_timeout_s=read_timeout_s,
            connections=CONNECTIONS,
        )

    def close(self) -> None:
        self._pool.close()

    def charge(
        self, reference: str, amount_cents: int, idempotency_key: str
    ) -> Payment:
        check_key(idempotency_key)
        check_amount(amount_cents)
        response = self._request(
            "POST", "/payments", idempotency_key,
            {"reference": reference, "amount_cents": amount_cents},
        )  # fmt: skip
        body = _accepted(response)
        payment_id = _field(body, "id", "payment id")
        _same(body, "idempotency_key", idempotency_key)
        return Payment(
            payment_id=payment_id,
            status=_known(CHARGED, body.get("status")),
            amount_cents=_amount(body, amount_cents),
            replayed=response.headers.get("Idempotent-Replayed") == "true",
        )

    def status(self, idempotency_key: str) -> PaymentStatus:
        check_key(idempotency_key)
        body = self._lookup(f"/payments/{quote(idempotency_key, safe='')}")
        if body is None:
            return PaymentStatus.NOT_FOUND
        return _lookup_answer(LOOKED_UP, body.get("status"))

    def refund(
        self, payment_id: str, amount_cents: int, idempotency_key: str
    ) -> Refund:
        check_key(idempotency_key)
        check_amount(amount_cents)
        response = self._request(
            "POST", "/refunds", idempotency_key,
            {"payment_id": payment_id, "amount_cents": amount_cents},
        )  # fmt: skip
        body = _accepted(response)
        refund_id = _field(body, "id", "refund id")
        _same(body, "idempotency_key", idempotency_key)
        _same(body, "payment_id", payment_id)
        return Refund(
            refund_id=refund_id,
            payment_id=payment_id,
            status=_known(REFUNDED, body.get("status")),
            amount_cents=_amount(body, amount_cents),
            replayed=response.headers.get("Idempotent-Replayed") == "true",
        )

    def refund_status(self, idempotency_key: str) -> RefundStatus:
        check_key(idempotency_key)
        body = self._lookup(f"/refunds/{quote(idempotency_key, safe='')}")
        if body is None:
            return RefundStatus.NOT_FOUND
        return _lookup_answer(REFUNDED, body.get("status"))

    def _lookup(self, path: str) -> dict[str, Any] | None:
        """The body of a 200, None for a 404; any other outcome proves nothing, so
        it is only ever transient: ask again later."""
        try:
            response = self._request("GET", path)
        except PaymentOutcomeUnknownError as error:  # a lookup changes nothing
            raise TransientPaymentError(str(error)) from error
        if response.status == NOT_FOUND:
            return None
        if not succeeded(response):
            refusal = _refusal(response)
            if isinstance(refusal, TransientPaymentError):
                raise refusal
            raise TransientPaymentError(f"status lookup failed: {refusal}") from refusal
        try:
            return _object(response)
        except PaymentOutcomeUnknownError as error:  # an unreadable lookup: ask again
            raise TransientPaymentError(str(error)) from error

    def _request(
        self,
        method: str,
        path: str,
        idempotency_key: str | None = None,
        json: dict[str, object] | None = None,
    ) -> BaseHTTPResponse:
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        body = None
        if json is not None:
            body = json_body(json)
            headers["Content-Type"] = "application/json"
        try:
            return self._pool.request(method, path, body, headers)
        except TransportFailedError as failed:
            raise classify_transport(failed.stage, described(failed)) from failed


def _accepted(response: BaseHTTPResponse) -> dict[str, Any]:
    if not succeeded(response):
        raise _refusal(response)
    return _object(response)


def _object(response: BaseHTTPResponse) -> dict[str, Any]:
    # A 2xx whose body we cannot read still moved money: the outcome is unknown.
    try:
        body = json_answer(response)
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise PaymentOutcomeUnknownError(
            f"provider answered {response.status} with an unreadable body"
        )
    return body


def _field(body: dict[str, Any], name: str, meaning: str) -> str:
    """An id the answer must carry: none is an answer not understood (look the
    key up); one Club cannot store or send back is for a person."""
    value = body.get(name)
    if value is None or value == "":
        raise PaymentOutcomeUnknownError(f"provider's answer has no {name}")
    return provider_id(value, meaning)


def _same(body: dict[str, Any], name: str, ours: str) -> None:
    """An answer that names another key or payment is about something else."""
    if name in body and body[name] != ours:
        raise UnusableAnswerError(
            f"the provider answered with {name} {body[name]!r:.80}, not {ours!r}"
        )


def _amount(body: dict[str, Any], asked: int) -> int:
    """The amount the provider says it took (the saga compares it with the price)."""
    if "amount_cents" not in body:
        return asked
    return provider_amount(body["amount_cents"])


def _known(table: dict[str, S], value: object) -> S:
    if not isinstance(value, str) or value not in table:
        raise PaymentOutcomeUnknownError(
            f"provider answered an unknown status {value!r}"
        )
    return table[value]


def _lookup_answer(table: dict[str, S], value: object) -> S:
    try:
        return _known(table, value)
    except PaymentOutcomeUnknownError as error:
        raise TransientPaymentError(str(error)) from error


def _refusal(response: BaseHTTPResponse) -> PaymentError:
    try:
        body = json_answer(response)
    except ValueError:
        body = None
    body = body if isinstance(body, dict) else {}
    # Free text goes into the purchase's events: made storable, never refused.
    detail = provider_text(body.get("detail"), reason_phrase(response))
    reason = body.get("decline_reason")
    try:
        payment_id: str | None = provider_id(body.get("payment_id"), "payment id")
    except UnusableAnswerError:
        payment_id = None  # only ever informative on a refusal
    return classify_http_status(
        response.status,
        detail,
        retry_after(response.headers.get("Retry-After")),
        decline_reason=None if reason is None else provider_text(reason, detail),
        payment_id=payment_id,
    )
