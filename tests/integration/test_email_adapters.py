"""The e-mail adapters against real servers: the HTTP client against the sandbox
process, the SMTP adapter against aiosmtpd; each failure lands in its class."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import closing
from email import message_from_bytes
from email.utils import formatdate
from uuid import uuid4

import pytest
from aiosmtpd.controller import Controller

from adapters.embedded.process import free_port
from adapters.providers.email_http import HttpEmailProvider
from adapters.providers.email_smtp import SmtpEmailProvider
from application.email import (
    DeliveryStatus,
    OutcomeUnknownError,
    OutgoingEmail,
    PermanentSendError,
    TransientSendError,
)
from tests.integration.half_answer import client_of
from tests.ports.email_provider import WELCOME, EmailProviderContract
from tests.stack import eventually

# --- HTTP, against the sandbox ------------------------------------------------


@pytest.fixture
def knobs(email_sandbox):
    with email_sandbox.fresh_knobs() as set_knobs:
        yield set_knobs


class TestHttpEmailProvider(EmailProviderContract):
    @pytest.fixture
    def provider(self, email_sandbox, knobs):
        with closing(HttpEmailProvider(email_sandbox.url, read_timeout_s=5)) as client:
            yield client

    @pytest.fixture
    def unreachable(self):
        with closing(HttpEmailProvider(f"http://127.0.0.1:{free_port()}")) as client:
            yield client

    @pytest.fixture
    def refused_address(self) -> str:
        return "nobody-at-all"  # the sandbox refuses what is not local@domain

    @pytest.fixture
    def received(self, email_sandbox):
        return email_sandbox.held

    def test_a_repeat_is_the_first_result(self, provider, email_sandbox):
        key = str(uuid4())
        first = provider.send(WELCOME, key)
        again = provider.send(WELCOME, key)
        assert (first.replayed, again.replayed) == (False, True)
        assert again.provider_id == first.provider_id
        assert email_sandbox.held(key) == 1

    def test_status_says_what_the_provider_holds(self, provider):
        key = "lesson/1%2F?#"  # awkward characters survive the URL
        assert provider.status(key) is DeliveryStatus.NOT_FOUND
        provider.send(WELCOME, key)
        assert provider.status(key) is DeliveryStatus.ACCEPTED

    @pytest.mark.parametrize("status", [500, 502, 503])
    def test_a_5xx_is_transient(self, provider, knobs, status):
        knobs(fail_rate=1.0, fail_status=status)
        with pytest.raises(TransientSendError, match=str(status)) as raised:
            provider.send(WELCOME, str(uuid4()))
        assert raised.value.retry_after is None

    @pytest.mark.parametrize("status", [400, 403, 422])
    def test_a_4xx_is_permanent(self, provider, knobs, status):
        knobs(fail_rate=1.0, fail_status=status)
        with pytest.raises(PermanentSendError, match=str(status)):
            provider.send(WELCOME, str(uuid4()))

    def test_a_429_is_transient_with_the_providers_retry_after(self, provider, knobs):
        knobs(rate_limit_per_s=1)
        time.sleep(1.05)  # earlier tests' sends leave the window
        provider.send(WELCOME, str(uuid4()))
        with pytest.raises(TransientSendError, match="429") as raised:
            provider.send(WELCOME, str(uuid4()))
        assert raised.value.retry_after == 1.0

    def test_a_dropped_response_is_unknown_and_the_lookup_finds_it(
        self, provider, knobs
    ):
        knobs(drop_rate=1.0)
        key = str(uuid4())
        with pytest.raises(OutcomeUnknownError, match="RemoteProtocolError"):
            provider.send(WELCOME, key)
        assert provider.status(key) is DeliveryStatus.ACCEPTED

    def test_a_read_timeout_after_sending_is_unknown(self, email_sandbox, knobs):
        knobs(latency_ms=1500)
        key = str(uuid4())
        impatient = HttpEmailProvider(email_sandbox.url, read_timeout_s=0.3)
        try:
            with pytest.raises(OutcomeUnknownError, match="ReadTimeout"):
                impatient.send(WELCOME, key)
        finally:
            impatient.close()
        # The provider went on without us: exactly why a blind resend is wrong.
        eventually(lambda: email_sandbox.held(key) == 1, timeout=10)

    def test_a_provider_that_is_down_is_transient_for_sends_and_lookups(
        self, provider, knobs
    ):
        knobs(down=True)
        with pytest.raises(TransientSendError, match="503"):
            provider.send(WELCOME, str(uuid4()))
        with pytest.raises(TransientSendError, match="503"):
            provider.status(str(uuid4()))

    def test_a_lookup_that_times_out_is_transient_not_unknown(
        self, email_sandbox, knobs
    ):
        knobs(latency_ms=1500)
        impatient = HttpEmailProvider(email_sandbox.url, read_timeout_s=0.3)
        try:
            with pytest.raises(TransientSendError, match="ReadTimeout"):
                impatient.status(str(uuid4()))
        finally:
            impatient.close()

    def test_a_bad_url_is_refused_naming_the_setting(self):
        with pytest.raises(ValueError, match="CLUB_EMAIL_PROVIDER_URL"):
            HttpEmailProvider("ftp://mail.example.org")


@pytest.mark.parametrize(
    "reply",
    [
        b'HTTP/1.1 201 Created\r\nContent-Length: 100\r\n\r\n{"id":',  # cut body
        b"HTTP/1.1 201 Cre",  # cut status line
        b"",  # no answer at all
    ],
)
def test_a_connection_dropped_mid_response_is_unknown(reply):
    with client_of(reply, HttpEmailProvider) as (client, server):
        with pytest.raises(OutcomeUnknownError):
            client.send(WELCOME, str(uuid4()))
        assert server.requests == 1  # it did leave: that is why it is unknown


# --- SMTP, against aiosmtpd ---------------------------------------------------

REFUSED = "refused@example.org"
BUSY = "busy@example.org"
CUT = "cut@example.org"  # stored, then the connection is cut before the 250


class Mailbox:
    """An aiosmtpd handler that keeps what it accepts and misbehaves by address."""

    def __init__(self) -> None:
        self.messages: list[bytes] = []

    # aiosmtpd finds its hooks by these names.
    async def handle_RCPT(self, server, session, envelope, address, options):  # noqa: N802
        if address == REFUSED:
            return "550 5.1.1 no such mailbox"
        if address == BUSY:
            return "450 4.2.1 mailbox busy, try later"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):  # noqa: N802
        self.messages.append(envelope.content)
        if CUT in envelope.rcpt_tos:
            server.transport.abort()
            await asyncio.sleep(0)
        return "250 OK"

    def with_message_id(self, id_: str) -> list[bytes]:
        return [m for m in self.messages if message_from_bytes(m)["Message-ID"] == id_]


@pytest.fixture(scope="module")
def smtp_server() -> Iterator[tuple[Controller, Mailbox]]:
    mailbox = Mailbox()
    controller = Controller(mailbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    yield controller, mailbox
    controller.stop()


def smtp_provider(port: int, timeout_s: float = 5) -> SmtpEmailProvider:
    return SmtpEmailProvider(
        "127.0.0.1", port, sender="club@example.org", timeout_s=timeout_s
    )


class TestSmtpEmailProvider(EmailProviderContract):
    @pytest.fixture
    def provider(self, smtp_server):
        return smtp_provider(smtp_server[0].port)

    @pytest.fixture
    def unreachable(self):
        return smtp_provider(free_port())

    @pytest.fixture
    def refused_address(self) -> str:
        return REFUSED

    @pytest.fixture
    def received(self, smtp_server):
        mailbox = smtp_server[1]
        return lambda key: len(mailbox.with_message_id(f"<{key}@club.invalid>"))

    def test_the_message_id_is_derived_from_the_key(self, provider, smtp_server):
        key = str(uuid4())
        result = provider.send(WELCOME, key)
        assert result.provider_id == f"<{key}@club.invalid>"
        [raw] = smtp_server[1].with_message_id(f"<{key}@club.invalid>")
        mail = message_from_bytes(raw)
        assert (mail["To"], mail["Subject"]) == (WELCOME.to, WELCOME.subject)
        assert mail.get_payload().strip() == WELCOME.body

    def test_status_is_unknown_smtp_has_no_lookup(self, provider):
        key = str(uuid4())
        provider.send(WELCOME, key)
        assert provider.status(key) is DeliveryStatus.UNKNOWN

    def test_a_4yz_reply_is_transient(self, provider):
        busy = OutgoingEmail(to=BUSY, subject="s", body="b")
        with pytest.raises(TransientSendError, match="450"):
            provider.send(busy, str(uuid4()))

    def test_a_cut_during_data_is_unknown_though_the_server_kept_it(
        self, provider, smtp_server
    ):
        key = str(uuid4())
        cut = OutgoingEmail(to=CUT, subject="s", body="b")
        with pytest.raises(OutcomeUnknownError):
            provider.send(cut, key)
        assert len(smtp_server[1].with_message_id(f"<{key}@club.invalid>")) == 1

    def test_a_non_ascii_address_is_permanent(self, provider):
        with pytest.raises(PermanentSendError, match="ASCII"):
            provider.send(
                OutgoingEmail(to="anna@пример.рф", subject="s", body="b"), "k"
            )

    def test_a_key_that_cannot_be_a_message_id_is_refused(self, provider):
        with pytest.raises(ValueError, match="dot-atom"):
            provider.send(WELCOME, "two..dots")


def answer_429(retry_after: str) -> bytes:
    return (
        "HTTP/1.1 429 Too Many Requests\r\nContent-Length: 0\r\n"
        f"Retry-After: {retry_after}\r\nConnection: close\r\n\r\n"
    ).encode()


@pytest.mark.parametrize(
    ("header", "low", "high"),
    [
        ("7", 7.0, 7.0),
        (30, 25.0, 30.0),  # an HTTP-date 30 s from now
        (-30, 0.0, 0.0),  # an HTTP-date already past
    ],
)
def test_retry_after_is_read_as_seconds_or_an_http_date(header, low, high):
    if isinstance(header, int):
        header = formatdate(time.time() + header, usegmt=True)
    with client_of(answer_429(header), HttpEmailProvider) as (client, _):
        with pytest.raises(TransientSendError) as raised:
            client.send(WELCOME, str(uuid4()))
        assert low <= raised.value.retry_after <= high


def test_an_unreadable_retry_after_is_no_hint():
    with client_of(answer_429("soon"), HttpEmailProvider) as (client, _):
        with pytest.raises(TransientSendError) as raised:
            client.send(WELCOME, str(uuid4()))
        assert raised.value.retry_after is None


@pytest.mark.parametrize("status", [400, 401, 409, 500])
def test_a_failed_lookup_is_only_ever_transient(status):
    head = f"HTTP/1.1 {status} No\r\nContent-Length: 0\r\nConnection: close\r\n"
    with (
        client_of(f"{head}\r\n".encode(), HttpEmailProvider) as (client, _),
        pytest.raises(TransientSendError, match=str(status)),
    ):
        client.status(str(uuid4()))
