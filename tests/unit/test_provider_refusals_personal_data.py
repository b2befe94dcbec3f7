"""A provider's refusal that quotes the recipient: the error Club keeps does not."""

from __future__ import annotations

import json
import smtplib

from urllib3 import HTTPResponse

from adapters.providers import email_http, email_smtp
from adapters.providers.http_client import TransportFailedError, described
from application.email import PermanentSendError, Stage, TransientSendError

ADDRESS = "ann.o'hara+yoga@example.org"


def test_an_http_refusal_keeps_its_words_not_the_address() -> None:
    detail = {"detail": f"not an address: {ADDRESS!r}"}
    answer = HTTPResponse(json.dumps(detail).encode(), status=422)
    refusal = email_http._refusal(answer)
    assert isinstance(refusal, PermanentSendError)
    assert ADDRESS not in str(refusal)
    assert "provider answered 422: not an address:" in str(refusal)


def test_an_smtp_reply_keeps_its_code_not_the_address() -> None:
    reply = f"5.1.1 <{ADDRESS}>: Recipient address rejected".encode()
    refusal = email_smtp._classified(smtplib.SMTPResponseException(550, reply))
    assert isinstance(refusal, PermanentSendError)
    assert ADDRESS not in str(refusal)
    assert "550" in str(refusal)
    assert "Recipient address rejected" in str(refusal)


def test_a_transport_error_that_names_an_address_is_described_without_it() -> None:
    error = smtplib.SMTPRecipientsRefused({ADDRESS: (450, b"try later")})
    assert ADDRESS not in email_smtp._describe(error)
    lost = TransportFailedError(Stage.SENT, "NetworkError", OSError(f"lost {ADDRESS}"))
    assert described(lost) == "NetworkError: lost <e-mail>"
    assert isinstance(email_http._refusal(HTTPResponse(status=503)), TransientSendError)
