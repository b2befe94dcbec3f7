"""The e-mail adapters against real servers: the HTTP client against the sandbox
process, the SMTP adapter against aiosmtpd; each failure lands in its class."""

from __future__ import annotations

import asyncio
import base64
import gzip
import re
import socket
import ssl
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, contextmanager, suppress
from email import message_from_bytes
from email.utils import formatdate
from uuid import uuid4

import pytest
import trustme
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult

from adapters.embedded.process import free_port
from adapters.providers.email_http import HttpEmailProvider
from adapters.providers.email_smtp import SmtpEmailProvider
from application.email import (
    DeliveryStatus,
    OutcomeUnknownError,
    OutgoingEmail,
    PermanentSendError,
    SendResult,
    TransientSendError,
)
from entrypoints.config.settings import Settings
from entrypoints.runtime.provider_urls import email_provider
from tests.integration.forward_proxy import ForwardProxy
from tests.integration.half_answer import client_of, read_request, serve_each
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
        b"",  # no answer at all
    ],  # a cut head: test_a_head_cut_by_the_providers_close_is_unknown
)
def test_a_connection_dropped_mid_response_is_unknown(reply):
    with client_of(reply, HttpEmailProvider) as (client, server):
        with pytest.raises(OutcomeUnknownError):
            client.send(WELCOME, str(uuid4()))
        assert server.requests == 1  # it did leave: that is why it is unknown


# --- HTTP, against scripted raw servers ---------------------------------------

ACCEPTED = b'HTTP/1.1 201 Created\r\nContent-Length: 11\r\n\r\n{"id":"a1"}'


class ScriptedProvider:
    """HalfAnswer's plumbing with a script per connection, each in a thread of its
    own (one connection held open does not stop the next): `script(self, conn)`.
    Scripts read the whole request before answering (`read_request`)."""

    def __init__(
        self,
        script: Callable[[ScriptedProvider, socket.socket], None],
        scheme: str = "http",
        tls: ssl.SSLContext | None = None,  # a real TLS server (else raw bytes)
    ) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        host = "127.0.0.1" if tls is None else "localhost"  # the certificate's
        scheme = "https" if tls else scheme
        self.url = f"{scheme}://{host}:{self.listener.getsockname()[1]}"
        self._tls = tls
        self.connections = 0
        self.keys: list[str] = []  # each request's Idempotency-Key, as it came
        self.heads: list[bytes] = []  # each request's head, as it came
        self.first_bytes = b""  # what a script that reads no request received
        self.closing = threading.Event()  # scripts that hang stop on it
        self._script = script
        serve_each(self.listener, self._play)

    def _play(self, conn: socket.socket) -> None:
        self.connections += 1
        with conn, suppress(OSError):  # the client hung up: its test says
            if self._tls is not None:
                with self._tls.wrap_socket(conn, server_side=True) as secured:
                    self._script(self, secured)
            else:
                self._script(self, conn)

    def read_request(self, conn: socket.socket) -> None:
        head = read_request(conn)
        key = re.search(rb"(?im)^idempotency-key: *(\S+)", head)
        self.keys.append(key[1].decode() if key else "")
        self.heads.append(head)

    def close(self) -> None:
        self.closing.set()
        self.listener.close()


@contextmanager
def client_scripted(
    script: Callable[[ScriptedProvider, socket.socket], None],
    scheme: str = "http",
    tls: ssl.SSLContext | None = None,
    **options,
) -> Iterator[tuple[HttpEmailProvider, ScriptedProvider]]:
    """As client_of: an HttpEmailProvider on a ScriptedProvider, both closed after."""
    server = ScriptedProvider(script, scheme, tls)
    client = HttpEmailProvider(server.url, **options)
    try:
        yield client, server
    finally:
        client.close()
        server.close()


@pytest.fixture
def trusted_tls(monkeypatch, tmp_path) -> ssl.SSLContext:
    """A server context for `localhost`, its CA the only one our client trusts
    (OpenSSL reads SSL_CERT_FILE when urllib3 builds a connection's context)."""
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost").configure_cert(server)
    return server


def test_a_login_in_the_providers_url_is_sent_as_basic_auth():
    def answer(server, conn):
        server.read_request(conn)
        conn.sendall(ACCEPTED)

    with client_scripted(answer) as (_, server):
        login = server.url.replace("//", "//club:p%40ss@")  # "@" percent-encoded
        with closing(HttpEmailProvider(login)) as client:
            client.send(WELCOME, str(uuid4()))
    expected = base64.b64encode(b"club:p@ss")
    [head] = server.heads
    assert re.search(rb"(?im)^authorization: basic " + expected + rb"\r?$", head)


def test_a_kept_alive_connection_the_provider_closed_is_replaced_before_sending():
    hung_up = threading.Semaphore(0)

    def two_answers_then_idle_close(server, conn):
        for _ in range(2):
            server.read_request(conn)
            conn.sendall(ACCEPTED)  # no "Connection: close": the client keeps it
        time.sleep(0.05)  # idle a moment, as a keep-alive timeout would
        conn.close()
        hung_up.release()

    keys = [str(uuid4()) for _ in range(4)]
    with client_scripted(two_answers_then_idle_close) as (client, server):
        for n, key in enumerate(keys):
            # Sent on a closed connection, it would fail after leaving: unknown.
            assert client.send(WELCOME, key) == SendResult(provider_id="a1")
            if n % 2:
                assert hung_up.acquire(timeout=5)
                time.sleep(0.05)  # the close reaches the client's idle socket
    assert server.keys == keys  # each sent once, none lost on a dead socket
    assert server.connections == 2  # kept alive for two, then a fresh one


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(b"HTTP/1.1 201 Cre", id="status line"),
        pytest.param(b"HTTP/1.1 201 Created\r\n", id="before the headers"),
        pytest.param(b"HTTP/1.1 201 Created\r\nContent-Ty", id="header line"),
        pytest.param(
            b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n", id="before the blank"
        ),
    ],
)
def test_a_head_cut_by_the_providers_close_is_unknown(reply):
    """http.client alone reads each of these as a whole 201: a send recorded as
    accepted that the provider may never have finished."""

    def answer_then_close(server, conn):
        server.read_request(conn)
        conn.sendall(reply)  # then a clean close: nothing left unread

    key = str(uuid4())
    with (
        client_scripted(answer_then_close) as (client, server),
        pytest.raises(OutcomeUnknownError, match="RemoteProtocolError"),
    ):
        client.send(WELCOME, key)
    assert server.keys == [key]  # it did leave: that is why it is unknown


def drip(head: bytes, each: bytes):
    """A script answering `head`, then `each` every 0.1 s (inside any read
    timeout) until the client hangs up: never silent, never done."""

    def script(server, conn):
        server.read_request(conn)
        conn.sendall(head)
        while not server.closing.wait(0.1):
            conn.sendall(each)

    return script


DRIPPED_HEAD = drip(b"HTTP/1.1 201 Created\r\n", b"X-A: b\r\n")
DRIPPED_BODY = drip(b"HTTP/1.1 201 Created\r\nContent-Length: 60000\r\n\r\n", b"{")
DRIPPED_TO_THE_CLOSE = drip(b"HTTP/1.1 201 Created\r\n\r\n", b"{")  # no length


@pytest.mark.parametrize(
    ("script", "over_tls"),
    [
        pytest.param(DRIPPED_HEAD, False, id="head"),
        pytest.param(DRIPPED_BODY, False, id="body"),
        pytest.param(DRIPPED_TO_THE_CLOSE, False, id="body without a length"),
        pytest.param(DRIPPED_HEAD, True, id="head over TLS"),
    ],
)
def test_an_answer_dripped_inside_the_read_timeout_ends_with_the_calls_deadline(
    script, over_tls, request
):
    """Each read waits 0.1 s, under its 0.5 s timeout, for ever: the whole call
    is cut at connect + 2 x read = 1.5 s (call_deadline), unknown as a cut answer."""
    key = str(uuid4())
    tls = request.getfixturevalue("trusted_tls") if over_tls else None
    options = {"connect_timeout_s": 0.5, "read_timeout_s": 0.5}
    with client_scripted(script, tls=tls, **options) as (client, server):
        started = time.monotonic()
        with pytest.raises(OutcomeUnknownError, match=r"ReadTimeout: .* 1\.5s"):
            client.send(WELCOME, key)
        took = time.monotonic() - started
    assert 1.5 <= took < 4, took
    assert server.keys == [key]


def test_a_calls_deadline_never_cuts_the_next_call_on_its_connection():
    """A call that ended is forgotten: its deadline (2.1 s) passing while the
    next call runs on the same kept-alive connection does not cut that one."""
    body = b'{"id":"a1"}'

    def two_slow_answers(server, conn):
        for seconds in (1.5, 1.0):  # the first deadline falls in the second
            server.read_request(conn)
            conn.sendall(b"HTTP/1.1 201 Created\r\nContent-Length: 11\r\n\r\n")
            for byte in body:  # a byte at a time: no read timeout
                time.sleep(seconds / len(body))
                conn.sendall(bytes([byte]))

    options = {"connect_timeout_s": 0.1, "read_timeout_s": 1.0}
    with client_scripted(two_slow_answers, **options) as (client, server):
        for _ in range(2):
            assert client.send(WELCOME, str(uuid4())) == SendResult(provider_id="a1")
    assert server.connections == 1


class EndlessAnswer:
    """A script answering `head` then `chunk` over and over, until the client
    stops reading (its socket closed) or 64 MiB have gone: what was sent is kept."""

    def __init__(self, head: bytes, chunk: bytes) -> None:
        self.head, self.chunk, self.sent = head, chunk, 0

    def __call__(self, server: ScriptedProvider, conn: socket.socket) -> None:
        server.read_request(conn)
        conn.sendall(self.head)
        while self.sent < 64 * 2**20 and not server.closing.is_set():
            conn.sendall(self.chunk)
            self.sent += len(self.chunk)


ENDLESS_201 = b"HTTP/1.1 201 Created\r\nContent-Length: 1000000000\r\n\r\n"


GZIPPED_NOTHING = gzip.compress(b"")  # 20 bytes that unpack to none


@pytest.mark.parametrize(
    ("head", "chunk", "answer"),
    [
        pytest.param(
            ENDLESS_201,
            b"{" + b" " * 65535,
            SendResult(provider_id=None),
            id="2xx: accepted",
        ),
        pytest.param(
            b"HTTP/1.1 400 Bad Request\r\nContent-Length: 1000000000\r\n\r\n",
            b"{" + b" " * 65535,
            PermanentSendError("provider answered 400: Bad Request"),
            id="4xx: refused, in its phrase",
        ),
        pytest.param(
            ENDLESS_201.replace(b"\r\n\r\n", b"\r\nContent-Encoding: gzip\r\n\r\n"),
            GZIPPED_NOTHING * 3277,
            SendResult(provider_id=None),
            id="gzip members of nothing: bytes of the wire count",
        ),
    ],
)
def test_an_endless_answer_is_read_no_further_than_its_status_needs(
    head, chunk, answer
):
    """A provider gone wrong (or a URL pointing at a file server) streams a body
    without end: its status decides, its first 64 KiB are all that is read, and
    the connection it came on is not used again."""
    endless = EndlessAnswer(head, chunk)
    with client_scripted(endless) as (client, server):
        for _ in range(2):
            if isinstance(answer, SendResult):
                assert client.send(WELCOME, str(uuid4())) == answer
            else:
                with pytest.raises(type(answer), match=str(answer)):
                    client.send(WELCOME, str(uuid4()))
        # The cut connection reused, the second would read the first's rest.
        assert server.connections == 2
    assert endless.sent < 2**25  # the client hung up; not read to the end


def gzipped_201(body: bytes) -> Callable[[ScriptedProvider, socket.socket], None]:
    packed = gzip.compress(body)
    head = (
        b"HTTP/1.1 201 Created\r\nContent-Encoding: gzip\r\n"
        + f"Content-Length: {len(packed)}\r\n\r\n".encode()
    )

    def answer(server, conn):
        server.read_request(conn)
        conn.sendall(head + packed)

    return answer


def test_a_gzipped_answer_is_read_and_a_gzip_bomb_unpacked_no_further_than_64_kib():
    """64 KiB of gzip can unpack to 64 MiB: no more than 64 KiB of it is made."""
    with client_scripted(gzipped_201(b'{"id":"a1"}')) as (client, _):
        assert client.send(WELCOME, str(uuid4())) == SendResult(provider_id="a1")
    with client_scripted(gzipped_201(b" " * 2**26)) as (client, _):
        tracemalloc.start()
        try:
            assert client.send(WELCOME, str(uuid4())) == SendResult(provider_id=None)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 2**23, peak  # 8 MiB: the answer was not unpacked whole


def test_no_free_connection_within_the_wait_sends_nothing():
    holding, release = threading.Event(), threading.Event()

    def answer_slowly(server, conn):
        server.read_request(conn)
        holding.set()
        conn.sendall(b"HTTP/1.1 201 Created\r\n")
        for _ in range(50):  # a header line each 0.1 s: no read timeout, up to 5 s
            if release.wait(0.1):
                break
            conn.sendall(b"X-Still-Working: yes\r\n")
        conn.sendall(ACCEPTED.partition(b"\r\n")[2])

    held, waiting = str(uuid4()), str(uuid4())
    options = {"read_timeout_s": 0.5, "connections": 1}  # the wait is the read timeout
    with (
        client_scripted(answer_slowly, **options) as (client, server),
        ThreadPoolExecutor(1) as other_thread,
    ):
        holder = other_thread.submit(client.send, WELCOME, held)
        assert holding.wait(5)  # the one connection is in use
        started = time.monotonic()
        with pytest.raises(TransientSendError, match="PoolTimeout"):
            client.send(WELCOME, waiting)
        waited = time.monotonic() - started
        release.set()
        assert holder.result(timeout=5) == SendResult(provider_id="a1")
    assert waited >= 0.5  # it waited for a connection, then gave up
    assert server.keys == [held]  # nothing of the waiting send left
    assert server.connections == 1


def hello_then_http(server, conn):
    server.first_bytes = conn.recv(65536)
    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")


def hello_then_close(server, conn):
    server.first_bytes = conn.recv(65536)


def close_at_once(server, conn):
    server.first_bytes = b""


def hello_then_silence(server, conn):
    server.first_bytes = conn.recv(65536)
    server.closing.wait(5)


@pytest.mark.parametrize(
    ("script", "name", "wait"),
    [  # a short timeout only where it is the answer: a busy box can be slow to close
        pytest.param(hello_then_http, "ConnectError", 5, id="answers plain HTTP"),
        pytest.param(hello_then_close, "ConnectError", 5, id="closes after the hello"),
        pytest.param(close_at_once, "ConnectError", 5, id="closes at once"),
        pytest.param(hello_then_silence, "ConnectTimeout", 0.3, id="never answers"),
    ],
)
def test_a_failed_tls_handshake_sends_nothing(script, name, wait):
    with client_scripted(script, "https", connect_timeout_s=wait) as (client, server):
        with pytest.raises(TransientSendError, match=f"not reached: {name}"):
            client.send(WELCOME, str(uuid4()))
        assert server.connections == 1  # the handshake was tried
    # A ClientHello at most (a TLS record starts 0x16): the request never left.
    assert server.first_bytes[:1] in {b"", b"\x16"}


# --- HTTP, through an egress proxy ---------------------------------------------

PROVIDER = "provider.invalid:8025"  # a name only the proxy can reach


@pytest.fixture
def no_proxies(monkeypatch) -> None:
    """None of this machine's proxy settings (the lower-case ones win over ours)."""
    for scheme in ("no", "http", "https", "all"):
        monkeypatch.delenv(f"{scheme}_proxy", raising=False)
        monkeypatch.delenv(f"{scheme}_proxy".upper(), raising=False)


@pytest.fixture
def egress(email_sandbox, monkeypatch, no_proxies) -> Iterator[ForwardProxy]:
    """A proxy in front of the sandbox, named by HTTP(S)_PROXY as a deployment's."""
    proxy = ForwardProxy(("127.0.0.1", email_sandbox.port))
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)
    yield proxy
    proxy.close()


def test_a_provider_is_reached_through_the_proxy_the_environment_names(
    egress, email_sandbox
):
    key = str(uuid4())
    with closing(HttpEmailProvider(f"http://{PROVIDER}")) as client:
        assert client.send(WELCOME, key).provider_id
        assert client.status(key) is DeliveryStatus.ACCEPTED
    assert egress.asked == [
        f"POST http://{PROVIDER}/messages HTTP/1.1",
        f"GET http://{PROVIDER}/messages/{key} HTTP/1.1",
    ]
    assert email_sandbox.held(key) == 1


def test_a_proxy_login_in_its_url_is_sent_to_the_proxy(
    email_sandbox, monkeypatch, no_proxies
):
    guarded = ForwardProxy(
        ("127.0.0.1", email_sandbox.port),
        required_auth="Basic " + base64.b64encode(b"club:p@ss").decode(),
    )
    monkeypatch.setenv("HTTP_PROXY", guarded.url.replace("//", "//club:p%40ss@"))
    try:
        with closing(HttpEmailProvider(f"http://{PROVIDER}")) as client:
            assert client.send(WELCOME, str(uuid4())).provider_id
    finally:
        guarded.close()
    assert len(guarded.asked) == 1


def test_a_forwarding_proxys_refusal_of_our_login_is_not_the_providers(
    email_sandbox, monkeypatch, no_proxies
):
    """A 407 is the proxy's: the provider was never asked (a 4xx of its own
    would dead-letter the e-mail for good)."""
    guarded = ForwardProxy(("127.0.0.1", email_sandbox.port), required_auth="x")
    monkeypatch.setenv("HTTP_PROXY", guarded.url)
    key = str(uuid4())
    try:
        with (
            closing(HttpEmailProvider(f"http://{PROVIDER}")) as client,
            pytest.raises(TransientSendError, match="ProxyError: 407"),
        ):
            client.send(WELCOME, key)
    finally:
        guarded.close()
    monkeypatch.delenv("HTTP_PROXY")  # the test's own client obeys it too
    assert email_sandbox.held(key) == 0


def test_a_connect_answer_that_is_no_http_sent_nothing(monkeypatch, no_proxies):
    def garbage(server, conn):
        server.read_request(conn)
        conn.sendall(b"garbage\r\n")

    proxy = ScriptedProvider(garbage)
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)
    try:
        with (
            closing(HttpEmailProvider(f"https://{PROVIDER}")) as client,
            pytest.raises(TransientSendError, match="ConnectError"),
        ):
            client.send(WELCOME, str(uuid4()))
    finally:
        proxy.close()


def test_no_proxy_and_this_machine_go_direct(egress, email_sandbox, monkeypatch):
    """NO_PROXY is read as Python's urllib reads it; this machine is never
    proxied (a laptop's global HTTP_PROXY reaches no sandbox on its loopback)."""
    with closing(HttpEmailProvider(email_sandbox.url)) as client:
        assert client.send(WELCOME, str(uuid4())).provider_id
    monkeypatch.setenv("NO_PROXY", ".invalid")
    with (
        closing(HttpEmailProvider(f"http://{PROVIDER}")) as client,
        pytest.raises(TransientSendError, match="ConnectError"),
    ):
        client.send(WELCOME, str(uuid4()))  # direct: the name resolves nowhere
    assert egress.asked == []


def test_an_https_provider_is_reached_through_a_tunnel_and_a_failure_there_is_not_sent(
    egress,
):
    """CONNECT, then TLS inside the tunnel (here to a plain-HTTP sandbox: the
    handshake fails). Whatever fails before the request is written sent nothing."""
    key = str(uuid4())
    with (
        closing(HttpEmailProvider(f"https://{PROVIDER}")) as client,
        pytest.raises(TransientSendError, match="ConnectError"),
    ):
        client.send(WELCOME, key)
    [connect] = egress.asked
    assert connect.startswith(f"CONNECT {PROVIDER} ")


def test_a_proxy_that_is_down_is_transient_and_nothing_was_sent(
    monkeypatch, no_proxies
):
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{free_port()}")
    with (
        closing(HttpEmailProvider(f"http://{PROVIDER}")) as client,
        pytest.raises(TransientSendError, match="ConnectError"),
    ):
        client.send(WELCOME, str(uuid4()))


# --- SMTP, against aiosmtpd ---------------------------------------------------

REFUSED = "refused@example.org"
BUSY = "busy@example.org"
CUT = "cut@example.org"  # stored, then the connection is cut before the 250
SILENT = "silent@example.org"  # stored, then no answer to the final dot


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
        if SILENT in envelope.rcpt_tos:
            await asyncio.sleep(5)
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

    def test_a_server_silent_after_data_is_unknown_after_one_timeout(self, smtp_server):
        """The message may be stored (it is here): unknown, said once the reply's
        wait is over (smtplib closes the connection on it, so no QUIT waits out a
        second one)."""
        key = str(uuid4())
        silent = OutgoingEmail(to=SILENT, subject="s", body="b")
        started = time.monotonic()
        with pytest.raises(OutcomeUnknownError, match="timed out"):
            smtp_provider(smtp_server[0].port, timeout_s=1).send(silent, key)
        assert time.monotonic() - started < 1.8  # one timeout (1 s), not two
        assert len(smtp_server[1].with_message_id(f"<{key}@club.invalid>")) == 1

    def test_a_non_ascii_address_is_permanent(self, provider):
        with pytest.raises(PermanentSendError, match="ASCII"):
            provider.send(
                OutgoingEmail(to="anna@пример.рф", subject="s", body="b"), "k"
            )

    def test_a_key_that_cannot_be_a_message_id_is_refused(self, provider):
        with pytest.raises(ValueError, match="dot-atom"):
            provider.send(WELCOME, "two..dots")


def _only(login: bytes, password: bytes) -> Callable[..., AuthResult]:
    def authenticator(server, session, envelope, mechanism, auth_data) -> AuthResult:
        given = (auth_data.login, auth_data.password)
        return AuthResult(success=given == (login, password), handled=False)

    return authenticator


def test_club_email_provider_url_names_a_mail_server_with_its_login():
    """The settings a worker starts from, end to end: the scheme picks SMTP, the
    URL's user and (quoted) password log in, CLUB_EMAIL_FROM is the sender."""
    mailbox = Mailbox()
    server = Controller(
        mailbox, hostname="127.0.0.1", port=free_port(),
        authenticator=_only(b"club", b"p@ss:word"), auth_require_tls=False,
    )  # fmt: skip
    server.start()
    try:
        for password, sent in (("wrong", False), ("p%40ss%3Aword", True)):
            settings = Settings.from_env({
                "CLUB_EMAIL_PROVIDER_URL":
                    f"smtp://club:{password}@127.0.0.1:{server.port}",
                "CLUB_EMAIL_FROM": "club@example.org",
            })  # fmt: skip
            key = str(uuid4())
            if not sent:
                with pytest.raises(PermanentSendError, match="535"):
                    email_provider(settings).send(WELCOME, key)
                continue
            email_provider(settings).send(WELCOME, key)
            [raw] = mailbox.with_message_id(f"<{key}@club.invalid>")
            assert message_from_bytes(raw)["From"] == "club@example.org"
        assert len(mailbox.messages) == 1
    finally:
        server.stop()


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
