"""A hostile SMTP server holds no worker: the whole call has a deadline, a reply
has caps, and each cut lands in its outcome class.

The server is real (a socket on a free port, in this process's threads) and
misbehaves at one point of the exchange: in its reply to EHLO (nothing accepted
yet: transient) or in its reply to the final dot of DATA (the message may be
kept: unknown, never a refusal). It drips a byte just inside the socket timeout,
sends `250-` continuation lines without end, or one line without end.
"""

from __future__ import annotations

import socketserver
import threading
import time
from collections.abc import Iterator

import pytest

from adapters.embedded.process import free_port
from adapters.providers.email_smtp import SmtpEmailProvider
from application.email import (
    EmailSendError,
    OutcomeUnknownError,
    OutgoingEmail,
    TransientSendError,
)

TIMEOUT_S = 1.0  # each socket operation
DEADLINE_S = 3.0  # the whole call
SLACK_S = 1.5  # a loaded machine's scheduling
DRIP_S = 0.4  # a byte this often: never silent as long as the timeout
HOSTILE_FOR_S = 20.0  # the server gives up misbehaving after this, in any case
MAIL = OutgoingEmail(to="ann@example.org", subject="Confirmed", body="See you")


class HostileHandler(socketserver.StreamRequestHandler):
    server: HostileServer

    def handle(self) -> None:
        self.wfile.write(b"220 hostile ESMTP\r\n")
        while line := self.rfile.readline():
            verb = line[:4].upper()
            if verb in (b"EHLO", b"HELO") and self.server.at == "EHLO":
                return self.misbehave()
            if verb == b"DATA":
                self.wfile.write(b"354 go ahead\r\n")
                while self.rfile.readline() not in (b".\r\n", b""):
                    pass
                if self.server.at == "DATA":
                    return self.misbehave()
                self.wfile.write(b"250 OK\r\n")
            elif verb == b"QUIT":
                self.wfile.write(b"221 bye\r\n")
                return None
            else:
                self.wfile.write(b"250 OK\r\n")
        return None

    def misbehave(self) -> None:
        until = time.monotonic() + HOSTILE_FOR_S
        try:
            while time.monotonic() < until:
                if self.server.how == "drip":  # a reply line a byte at a time
                    for byte in b"250-still thinking\r\n":
                        self.wfile.write(bytes([byte]))
                        time.sleep(DRIP_S)
                elif self.server.how == "endless lines":
                    self.wfile.write(b"250-" + b"x" * 60 + b"\r\n")
                else:  # one line that never ends
                    self.wfile.write(b"250 " + b"x" * 4096)
        except OSError:  # the client cut it: what the test wants
            return


class HostileServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, how: str, at: str) -> None:
        super().__init__(("127.0.0.1", free_port()), HostileHandler)
        self.how, self.at = how, at


@pytest.fixture
def hostile(request: pytest.FixtureRequest) -> Iterator[HostileServer]:
    how, at = request.param
    server = HostileServer(how, at)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _send(server: HostileServer) -> tuple[EmailSendError, float]:
    provider = SmtpEmailProvider(
        "127.0.0.1",
        server.server_address[1],
        sender="club@example.org",
        timeout_s=TIMEOUT_S,
        deadline_s=DEADLINE_S,
    )
    began = time.monotonic()
    with pytest.raises(EmailSendError) as raised:
        provider.send(MAIL, "a-key")
    return raised.value, time.monotonic() - began


@pytest.mark.parametrize(
    ("hostile", "outcome"),
    [(("drip", "EHLO"), TransientSendError), (("drip", "DATA"), OutcomeUnknownError)],
    indirect=["hostile"],
)
def test_a_reply_dripped_inside_the_timeout_is_cut_at_the_deadline(
    hostile: HostileServer, outcome: type[EmailSendError]
) -> None:
    error, took = _send(hostile)
    assert type(error) is outcome, error
    assert "no whole reply within 3s" in str(error)
    assert DEADLINE_S <= took < DEADLINE_S + SLACK_S  # never silent for 1 s


@pytest.mark.parametrize(
    ("hostile", "outcome"),
    [
        (("endless lines", "EHLO"), TransientSendError),
        (("endless lines", "DATA"), OutcomeUnknownError),
        (("endless line", "EHLO"), TransientSendError),
        (("endless line", "DATA"), OutcomeUnknownError),
    ],
    indirect=["hostile"],
)
def test_a_reply_over_its_caps_is_cut_as_a_broken_connection(
    hostile: HostileServer, outcome: type[EmailSendError]
) -> None:
    """Not the server's refusal (smtplib's "500 Line too long"): how far the
    call got decides, as for any cut connection."""
    error, took = _send(hostile)
    assert type(error) is outcome, error
    assert "over" in str(error), error
    assert took < DEADLINE_S  # the cap, not the deadline, ended it
