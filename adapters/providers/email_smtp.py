"""The e-mail provider port over SMTP (stdlib `smtplib`), one connection per send.

SMTP has no idempotency key. The key becomes the `Message-ID`
(`<{key}@club.invalid>`), so a duplicate is at least recognisable downstream: many
mail stores and clients fold messages with one Message-ID. And SMTP has no status
lookup: `status()` always answers `DeliveryStatus.UNKNOWN`, which tells the worker
that reconciliation is impossible here and the choice (resend and risk a duplicate,
or give up and risk a loss) is its policy, not this adapter's.

Stages: a failure before DATA (connect, EHLO, MAIL, RCPT) means the server accepted
nothing, so a disconnect there is transient; a reply code there is classified as
RFC 5321 says (4yz transient, 5yz permanent: a refused address is permanent). A
disconnect or timeout during DATA may come after the server committed the message:
the outcome is unknown.

Bounds, as the HTTP provider client's (http_client.py): each socket operation
has `timeout_s`, and the whole call a deadline (`deadline_s`, connecting and QUIT
included) past which its socket is shut under it (call_deadline.py), so a server
that drips a byte just inside the timeout costs the deadline, never the worker.
A reply is read up to MAX_REPLY_BYTES, each of its lines up to MAX_LINE_BYTES:
endless `250-` continuation lines, or one endless line, end the call as a cut
connection does — transient before DATA, unknown from DATA on — never as the
server's refusal.
"""

from __future__ import annotations

import re
import smtplib
import ssl
from email.message import EmailMessage
from email.utils import formatdate
from typing import Any

from adapters.providers.call_deadline import Call
from adapters.providers.http_client import MAX_ANSWER_BYTES
from application.email import (
    DeliveryStatus,
    OutgoingEmail,
    SendResult,
    Stage,
    check_key,
    classify_smtp_reply,
    classify_transport,
)
from application.personal_data import without_addresses

MESSAGE_ID_DOMAIN = "club.invalid"
# RFC 5322 dot-atom text, the shape the left part of a Message-ID must have.
ATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
DOT_ATOM = re.compile(rf"{ATOM}(\.{ATOM})*")
SERVICE_READY = 220
OK = 250
WILL_FORWARD = 251
# The HTTP provider client's whole-call deadline at its defaults (connect 2 s and
# twice a 10 s read) and its cap on an answer.
CALL_DEADLINE_S = 22.0
MAX_REPLY_BYTES = MAX_ANSWER_BYTES
MAX_LINE_BYTES = 8192  # smtplib's own limit on one line


def message_id(idempotency_key: str) -> str:
    if not DOT_ATOM.fullmatch(check_key(idempotency_key)):
        raise ValueError("an SMTP idempotency key must be a dot-atom (e.g. a UUID)")
    return f"<{idempotency_key}@{MESSAGE_ID_DOMAIN}>"


class SmtpEmailProvider:
    def __init__(
        self,
        host: str,
        port: int,
        *,
        sender: str,
        timeout_s: float = 10.0,
        deadline_s: float = CALL_DEADLINE_S,
        starttls: bool = False,
        login: tuple[str, str] | None = None,
    ) -> None:
        self._host = host
        self._port = port
        self._sender = sender
        self._timeout_s = timeout_s  # every socket operation, connect included
        self._deadline_s = deadline_s  # the whole call
        self._starttls = starttls
        self._login = login

    def send(self, message: OutgoingEmail, idempotency_key: str) -> SendResult:
        mail = self._compose(message, idempotency_key)
        smtp = _CappedSmtp(timeout=self._timeout_s)  # not connected yet
        call = Call(self._deadline_s)
        call.attach(smtp)  # the deadline counts the connecting too
        try:
            try:
                _connect(smtp, self._host, self._port)
            except (OSError, smtplib.SMTPException) as error:
                smtp.close()
                raise classify_transport(
                    Stage.NOT_SENT, _describe(error, call)
                ) from error
            try:
                self._envelope(smtp, message.to, call)
                self._data(smtp, mail, call)
            finally:
                _quietly_quit(smtp)
        finally:
            call.end()
        return SendResult(provider_id=mail["Message-ID"])

    def status(self, idempotency_key: str) -> DeliveryStatus:
        """SMTP offers no lookup: always UNKNOWN (see the module docstring)."""
        check_key(idempotency_key)
        return DeliveryStatus.UNKNOWN

    def _compose(self, message: OutgoingEmail, key: str) -> EmailMessage:
        mail = EmailMessage()
        mail["From"] = self._sender
        mail["To"] = message.to
        mail["Subject"] = message.subject
        mail["Date"] = formatdate(localtime=False)
        mail["Message-ID"] = message_id(key)
        mail.set_content(message.body)
        return mail

    def _envelope(self, smtp: smtplib.SMTP, recipient: str, call: Call) -> None:
        """Up to RCPT: nothing is accepted yet, so a lost connection is transient."""
        try:
            smtp.ehlo_or_helo_if_needed()
            if self._starttls:
                smtp.starttls(context=ssl.create_default_context())
                smtp.ehlo()
            if self._login:
                smtp.login(*self._login)
            _expect(smtp.mail(self._sender), OK)
            _expect(smtp.rcpt(recipient), OK, WILL_FORWARD)
        except smtplib.SMTPResponseException as error:
            raise _classified(error) from error
        except UnicodeEncodeError as error:
            # Without SMTPUTF8 an envelope address is ASCII: a refused address.
            raise classify_smtp_reply(553, "the address is not ASCII") from error
        except (OSError, smtplib.SMTPException) as error:
            raise classify_transport(Stage.NOT_SENT, _describe(error, call)) from error

    def _data(self, smtp: smtplib.SMTP, mail: EmailMessage, call: Call) -> None:
        """DATA: once the final dot left, the server may have committed it."""
        try:
            smtp.data(mail.as_bytes())
        except smtplib.SMTPResponseException as error:
            raise _classified(error) from error
        except (OSError, smtplib.SMTPException) as error:
            raise classify_transport(Stage.SENT, _describe(error, call)) from error


class _CappedSmtp(smtplib.SMTP):
    """smtplib's client, each reply read within MAX_REPLY_BYTES."""

    def getreply(self) -> tuple[int, bytes]:
        if self.file is None and self.sock is not None:
            self.file = _CappedReply(self.sock.makefile("rb"))
        if isinstance(self.file, _CappedReply):
            self.file.left = MAX_REPLY_BYTES  # for this reply
        return super().getreply()


class _CappedReply:
    """The socket's reader, failing a reply over its caps as a broken connection
    (smtplib closes it on an OSError): smtplib's own "Line too long" would be a
    500 reply, the server's refusal, which it is not."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw
        self.left = MAX_REPLY_BYTES

    def readline(self, limit: int = -1) -> bytes:
        most = MAX_LINE_BYTES + 1 if limit < 0 else min(limit, MAX_LINE_BYTES + 1)
        line: bytes = self._raw.readline(most)
        self.left -= len(line)
        if len(line) > MAX_LINE_BYTES:
            raise OSError(f"a reply line over {MAX_LINE_BYTES} bytes")
        if self.left < 0:
            raise OSError(f"a reply over {MAX_REPLY_BYTES} bytes")
        return line

    def close(self) -> None:
        self._raw.close()


def _connect(smtp: smtplib.SMTP, host: str, port: int) -> None:
    """What smtplib.SMTP(host, port) does, on a client the deadline watches."""
    code, greeting = smtp.connect(host, port)
    if code != SERVICE_READY:
        raise smtplib.SMTPConnectError(code, greeting)


def _expect(reply: tuple[int, bytes], *codes: int) -> None:
    code, text = reply
    if code not in codes:
        raise smtplib.SMTPResponseException(code, text)


def _quietly_quit(smtp: smtplib.SMTP) -> None:
    # The outcome is already decided; a failing QUIT changes nothing.
    try:
        smtp.quit()
    except (OSError, smtplib.SMTPException):
        smtp.close()


def _classified(error: smtplib.SMTPResponseException) -> Exception:
    reply = error.smtp_error
    text = reply.decode(errors="replace") if isinstance(reply, bytes) else str(reply)
    # "550 5.1.1 <ann@...>: Recipient address rejected": the reply's text is
    # stored and logged, the address is not (docs/guarantees.md).
    return classify_smtp_reply(error.smtp_code, without_addresses(text))


def _describe(error: BaseException, call: Call | None = None) -> str:
    if call is not None and call.cut:  # the deadline cut it, not the server
        return f"ReadTimeout: no whole reply within {call.seconds:g}s"
    said = without_addresses(str(error))
    return f"{type(error).__name__}: {said}" if said else type(error).__name__
