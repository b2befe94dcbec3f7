"""The e-mail port's one decision table: which failure is which class."""

from __future__ import annotations

import pytest

from application.email import (
    MAX_KEY_LENGTH,
    OutcomeUnknownError,
    OutgoingEmail,
    PermanentSendError,
    Stage,
    TransientSendError,
    check_key,
    classify_http_status,
    classify_smtp_reply,
    classify_transport,
)


@pytest.mark.parametrize("status", [500, 502, 503, 504, 599])
def test_an_http_5xx_is_transient(status):
    error = classify_http_status(status, "busy", retry_after=3.0)
    assert isinstance(error, TransientSendError)
    assert error.retry_after == 3.0


def test_an_http_429_is_transient_and_keeps_retry_after():
    error = classify_http_status(429, "slow down", retry_after=2.0)
    assert isinstance(error, TransientSendError)
    assert error.retry_after == 2.0


def test_an_http_408_is_transient():
    assert type(classify_http_status(408, "too slow")) is TransientSendError


def test_an_http_409_key_in_flight_is_unknown():
    # The IETF Idempotency-Key draft's 409: an earlier try with this key is
    # still running at the provider and may be accepted; look it up, do not drop it.
    assert type(classify_http_status(409, "in flight")) is OutcomeUnknownError


@pytest.mark.parametrize("status", [300, 400, 401, 403, 404, 413, 422])
def test_any_other_answer_is_permanent(status):
    assert isinstance(classify_http_status(status, "no"), PermanentSendError)


@pytest.mark.parametrize(("code", "cls"), [
    (421, TransientSendError), (450, TransientSendError), (452, TransientSendError),
    (550, PermanentSendError), (553, PermanentSendError), (554, PermanentSendError),
])  # fmt: skip
def test_smtp_4yz_is_transient_5yz_permanent(code, cls):
    assert type(classify_smtp_reply(code, "reply")) is cls


def test_a_transport_failure_is_transient_only_before_anything_left():
    assert type(classify_transport(Stage.NOT_SENT, "refused")) is TransientSendError
    assert type(classify_transport(Stage.SENT, "timeout")) is OutcomeUnknownError


@pytest.mark.parametrize(
    "key", ["", "k" * (MAX_KEY_LENGTH + 1), "has space", "tab\t", "é", "nul\x00"]
)
def test_a_bad_key_is_refused(key):
    with pytest.raises(ValueError, match="visible ASCII"):
        check_key(key)


def test_a_key_of_255_visible_characters_is_kept():
    assert check_key("~" * MAX_KEY_LENGTH) == "~" * MAX_KEY_LENGTH


@pytest.mark.parametrize(
    "fields",
    [
        {"to": "a@b.c\r\nBcc: eve@evil.example", "subject": "s", "body": "b"},
        {"to": "a@b.c", "subject": "hi\nBcc: eve@evil.example", "body": "b"},
        {"to": "  ", "subject": "s", "body": "b"},
        {"to": "a@b.c", "subject": "s", "body": "nul\x00"},
    ],
)
def test_a_message_that_could_forge_headers_is_refused(fields):
    with pytest.raises(ValueError, match="must not"):
        OutgoingEmail(**fields)
