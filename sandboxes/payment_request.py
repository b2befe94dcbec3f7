"""Reading one charge or refund request to the payment sandbox: key and JSON body.

Bad input is refused with the reason, never a 500: a missing or oversized key, a
body that is not JSON, unknown fields, amounts that are not whole cents within
bounds (negative, zero, 10**30, 1.5, true, "100"), NUL bytes or lone surrogates.
"""

from __future__ import annotations

import hashlib
import json

import attrs

from application.payment import MAX_AMOUNT_CENTS, MAX_KEY_LENGTH
from sandboxes.email_request import RefusedError, read_key

__all__ = ["ChargeRequest", "RefundRequest", "RefusedError", "read_key"]

MAX_REFERENCE = MAX_KEY_LENGTH  # one bound for every id-like text


@attrs.frozen(kw_only=True)
class ChargeRequest:
    key: str
    reference: str
    amount_cents: int
    fingerprint: str


@attrs.frozen(kw_only=True)
class RefundRequest:
    key: str
    payment_id: str
    amount_cents: int
    fingerprint: str


def read_charge(key: str, raw: bytes) -> ChargeRequest:
    data = _object(raw, {"reference", "amount_cents"})
    return ChargeRequest(
        key=key,
        reference=_text(data, "reference"),
        amount_cents=_amount(data),
        fingerprint=_fingerprint(data),
    )


def read_refund(key: str, raw: bytes) -> RefundRequest:
    data = _object(raw, {"payment_id", "amount_cents"})
    return RefundRequest(
        key=key,
        payment_id=_text(data, "payment_id"),
        amount_cents=_amount(data),
        fingerprint=_fingerprint(data),
    )


def _object(raw: bytes, fields: set[str]) -> dict[str, object]:
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):  # int() of 5000 digits is a ValueError too
        raise RefusedError(
            400, "malformed-json", "Malformed JSON", "the body is not UTF-8 JSON"
        ) from None
    if not isinstance(data, dict):
        raise _invalid(
            f"the body must be a JSON object {{{', '.join(sorted(fields))}}}"
        )
    unknown = sorted(set(data) - fields)
    if unknown:
        raise _invalid(f"unknown field(s): {', '.join(unknown)}")
    return data


def _amount(data: dict[str, object]) -> int:
    value = data.get("amount_cents")
    # bool is an int in Python: `true` cents is a mistake, not one cent.
    if isinstance(value, bool) or not isinstance(value, int):
        raise _invalid("amount_cents must be a whole number of cents")
    if not 1 <= value <= MAX_AMOUNT_CENTS:
        raise _invalid(f"amount_cents must be within 1..{MAX_AMOUNT_CENTS}")
    return value


def _text(data: dict[str, object], name: str) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value.strip():
        raise _invalid(f"{name} must be a non-empty string")
    if len(value) > MAX_REFERENCE:
        raise _invalid(f"{name} is over {MAX_REFERENCE} characters")
    if any(c < " " or c == "\x7f" for c in value):
        raise _invalid(f"{name} must not contain control characters (NUL, CR, LF…)")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _invalid(f"{name} contains a lone surrogate") from None
    return value


def _fingerprint(data: dict[str, object]) -> str:
    canonical = json.dumps(data, sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _invalid(detail: str) -> RefusedError:
    return RefusedError(422, "invalid-request", "The request is not valid", detail)
