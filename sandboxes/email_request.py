"""Reading one send request to the e-mail sandbox: its key and its JSON body.

Bad input is refused with the reason, never a 500: a missing or oversized key, a body
that is not JSON, fields of the wrong type, NUL bytes or lone surrogates (which the
SQLite file could not even store as UTF-8).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

import attrs

from application.email import MAX_KEY_LENGTH, check_key

MAX_ADDRESS = 320  # RFC 3696: 64 + 1 + 255
MAX_SUBJECT = 998  # RFC 5322's line limit
MAX_BODY_CHARS = 256 * 1024


class RefusedError(Exception):
    def __init__(self, status: int, slug: str, title: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.slug = slug
        self.title = title


@attrs.frozen(kw_only=True)
class SendRequest:
    key: str
    to: str
    subject: str
    body: str
    fingerprint: str


def read_key(headers: Mapping[str, str]) -> str:
    key = headers.get("idempotency-key")
    if key is None:
        raise RefusedError(
            400, "idempotency-key-missing", "Idempotency-Key missing",
            "send an Idempotency-Key header: the same key for every retry",
        )  # fmt: skip
    try:
        return check_key(key)
    except ValueError:
        raise RefusedError(
            400, "idempotency-key-invalid", "Idempotency-Key invalid",
            f"an Idempotency-Key is 1-{MAX_KEY_LENGTH} visible ASCII characters",
        ) from None  # fmt: skip


def read_send(key: str, raw: bytes) -> SendRequest:
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        raise RefusedError(
            400, "malformed-json", "Malformed JSON", "the body is not UTF-8 JSON"
        ) from None
    if not isinstance(data, dict):
        raise _invalid("the body must be a JSON object {to, subject, body}")
    unknown = sorted(set(data) - {"to", "subject", "body"})
    if unknown:
        raise _invalid(f"unknown field(s): {', '.join(unknown)}")
    to = _text(data, "to", MAX_ADDRESS, single_line=True)
    local, at, domain = to.rpartition("@")
    if not (at and local and domain) or any(c.isspace() for c in to):
        raise RefusedError(
            422, "address-refused", "Address refused", f"not an address: {to!r}"
        )
    fingerprint = hashlib.sha256(
        json.dumps(data, sort_keys=True, ensure_ascii=True).encode()
    ).hexdigest()
    return SendRequest(
        key=key, to=to, fingerprint=fingerprint,
        subject=_text(data, "subject", MAX_SUBJECT, single_line=True),
        body=_text(data, "body", MAX_BODY_CHARS, single_line=False),
    )  # fmt: skip


def _text(data: dict[str, object], name: str, limit: int, *, single_line: bool) -> str:
    value = data.get(name)
    if not isinstance(value, str):
        raise _invalid(f"{name} must be a string")
    if len(value) > limit:
        raise _invalid(f"{name} is over {limit} characters")
    if "\x00" in value:
        raise _invalid(f"{name} contains a NUL character")
    if single_line and ("\r" in value or "\n" in value):
        raise _invalid(f"{name} must be one line (a header cannot hold CR or LF)")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _invalid(f"{name} contains a lone surrogate") from None
    return value


def _invalid(detail: str) -> RefusedError:
    return RefusedError(422, "invalid-message", "The message is not valid", detail)
