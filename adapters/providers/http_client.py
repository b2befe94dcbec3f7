"""One bounded HTTP client for a provider: every phase has a timeout and a whole
call a deadline (call_deadline), so a provider that hangs, or answers a byte at a
time, costs a timeout, never a worker or a saga.

Both provider adapters (e-mail and payment) send through `ProviderPool`: urllib3's
public API, each call holding one `urllib3.connection` connection of a small queue
of our own, the cheapest stack in CPU per send that keeps every behaviour below
(docs/decisions/2026-12-01-provider-http-client.md). It says how far a failed
request got: that decides whether its outcome is unknown. The answer's reading
shared by both (JSON, `Retry-After`, a failure's words) is here too.
"""

from __future__ import annotations

import email.utils
import http.client
import ipaddress
import json
import queue
import threading
import urllib.request
import zlib
from collections.abc import Mapping
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote

from urllib3 import make_headers
from urllib3._base_connection import ProxyConfig  # a type only: no private method
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    LocationParseError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
)
from urllib3.response import BaseHTTPResponse, HTTPResponse
from urllib3.util import Url, parse_url

from adapters.providers.call_deadline import Call
from application.email import Stage
from application.personal_data import without_addresses

MAX_RETRY_AFTER_S = 86_400.0
# A provider answers in a few hundred bytes (an error page, a few KB): more is
# not read, so a provider gone wrong, or a URL pointing at a file server, costs
# this much memory a call, not the size of what it streams.
MAX_ANSWER_BYTES = 64 * 1024
PROXY_AUTHENTICATION_REQUIRED = 407
# An https proxy is verified as a provider is (the default store); urllib3 reads
# this only to set up TLS to the proxy inside which the tunnel's TLS runs.
_PROXY_TLS = ProxyConfig(
    ssl_context=None,
    use_forwarding_for_https=False,
    assert_hostname=None,
    assert_fingerprint=None,
)


class TransportFailedError(Exception):
    """A request that got no answer: `stage` says how far it got, `name` what failed
    in httpx's words (ConnectError, ReadTimeout, RemoteProtocolError...), so the
    errors Club stores read the same whichever client met them."""

    def __init__(self, stage: Stage, name: str, cause: Exception) -> None:
        super().__init__(f"{name}: {cause}")
        self.stage, self.name, self.cause = stage, name, cause


class ProviderPool:
    """Kept-alive connections to one provider, shared by the threads that call it.

    Each call takes a connection, makes it if it must, sends once and puts it
    back: no hidden resend (a POST that left and got no answer is the caller's to
    reconcile), no redirect followed. A connection the provider closed while idle
    is seen (its socket polled when taken) and replaced before anything is written
    to it. At most `connections` at once; a caller who finds none free waits up to
    the read timeout, then nothing was sent (as httpx's pool timeout). A proxy the
    environment names (`HTTP(S)_PROXY`, `NO_PROXY`) is used (`_proxy_for`): a
    deployment whose way out is an egress proxy needs no other setting.
    """

    def __init__(
        self,
        base_url: str,
        setting: str,
        *,
        connect_timeout_s: float,
        read_timeout_s: float,
        connections: int,
    ) -> None:
        url = _parsed(base_url)
        if url is None or url.scheme not in ("http", "https") or not url.host:
            raise ValueError(
                f"{setting} must look like http://host:port, got {base_url!r}"
            )
        self._url, self._proxy = url, _proxy_for(url)
        self._connect_s, self._read_s = connect_timeout_s, read_timeout_s
        # A whole call, once it has its connection: connecting, a silence as long
        # as the read timeout before the head, and as long again for the rest.
        self._call_s = connect_timeout_s + 2 * read_timeout_s
        self._prefix = (url.path or "").rstrip("/")
        # Credentials in the URL's userinfo are sent as Basic auth, as httpx did.
        login = _login(url)
        self._headers = make_headers(basic_auth=login) if login else {}
        proxy_login = self._proxy and _login(self._proxy)
        self._proxy_headers = (
            make_headers(proxy_basic_auth=proxy_login) if proxy_login else {}
        )
        self._forwarded = self._proxy is not None and url.scheme == "http"
        if self._forwarded:  # the proxy reads the whole URL, and our login to it
            port = f":{url.port}" if url.port else ""
            self._prefix = f"http://{url.host}{port}{self._prefix}"
            self._headers |= self._proxy_headers
        # Last in, first out: the connection used last is the likeliest still
        # open at the provider's end. None: a place for one not made yet.
        self._idle: queue.LifoQueue[HTTPConnection | None] = queue.LifoQueue()
        for _ in range(connections):
            self._idle.put(None)
        self._closed = threading.Event()

    def close(self) -> None:
        self._closed.set()  # a call still running closes its own connection
        while not self._idle.empty():
            if (conn := self._idle.get_nowait()) is not None:
                conn.close()

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> BaseHTTPResponse:
        """The answer, read (its body up to MAX_ANSWER_BYTES + 1: `json_answer`
        refuses one that long); raises `TransportFailedError` when none came."""
        if self._closed.is_set():  # a bug, not the provider's answer: no send error
            raise RuntimeError("the provider's client was closed")
        try:
            conn = self._idle.get(timeout=self._read_s)
        except queue.Empty:
            full = TimeoutError(f"no connection free within {self._read_s:g}s")
            raise TransportFailedError(Stage.NOT_SENT, "PoolTimeout", full) from None
        call = Call(self._call_s)
        try:
            if conn is not None and conn.is_connected:
                call.attach(conn)
            else:
                # Never made, closed after a cut, or closed by the provider while
                # idle (its close polls as readable): a new one, before a byte is
                # written. New, not reconnected: close() forgets a set_tunnel.
                if conn is not None:
                    conn.close()
                conn = self._new()
                call.attach(conn)  # the deadline counts the connecting too
                _connect(conn)
                conn.timeout = self._read_s  # from here, each silence
            answer = _exchange(
                conn,
                call,
                method,
                self._prefix + path,
                body=body,
                headers=self._headers | (headers or {}),
            )
        finally:
            call.end()  # first: its deadline must never cut the next call on conn
            if self._closed.is_set() and conn is not None:
                conn.close()
            self._idle.put(conn)
        if self._forwarded and answer.status == PROXY_AUTHENTICATION_REQUIRED:
            # The proxy's own refusal, not the provider's: it was never asked.
            refused = OSError("407 Proxy Authentication Required: our login refused")
            raise TransportFailedError(Stage.NOT_SENT, "ProxyError", refused)
        return answer

    def _new(self) -> HTTPConnection:
        """A connection not made yet: to the provider; to the proxy, which forwards
        an http provider's requests (their line names the whole URL); or to the
        proxy, tunnelled by CONNECT to an https provider (TLS end to end)."""
        url, proxy = self._url, self._proxy
        if proxy is None or url.scheme == "http":
            to = proxy or url
            made = HTTPSConnection if to.scheme == "https" else HTTPConnection
            conn = made(str(to.host), to.port, timeout=self._connect_s)
        else:
            conn = HTTPSConnection(
                str(proxy.host),
                proxy.port,
                timeout=self._connect_s,
                proxy=proxy._replace(auth=None),
                proxy_config=_PROXY_TLS,
            )
            conn.set_tunnel(
                str(url.host), url.port, self._proxy_headers, scheme=str(proxy.scheme)
            )
        conn.response_class = _WholeHead
        return conn


def _connect(conn: HTTPConnection) -> None:
    try:
        conn.connect()
    # Refused, timed out, DNS, TLS handshake; a proxy's CONNECT refused (a 407
    # included) or answered in no HTTP: nothing reached the provider in any.
    except (OSError, HTTPError, http.client.HTTPException) as error:
        conn.close()
        timed_out = isinstance(error, TimeoutError) or (  # TLS, or TCP:
            isinstance(error, ConnectTimeoutError)
            and not isinstance(error, NewConnectionError)  # its subclass, oddly
        )
        name = "ConnectTimeout" if timed_out else "ConnectError"
        raise TransportFailedError(Stage.NOT_SENT, name, error) from error


def _exchange(
    conn: HTTPConnection,
    call: Call,
    method: str,
    url: str,
    *,
    body: bytes | None,
    headers: dict[str, str],
) -> BaseHTTPResponse:
    """One request written, its answer read (within MAX_ANSWER_BYTES); a failure
    from the first byte written on is SENT: the provider may have acted on it."""
    response: BaseHTTPResponse | None = None
    writing = True
    try:
        conn.request(method, url, body=body, headers=headers, preload_content=False)
        writing = False
        # http.client lets go of conn.sock when the answer runs to the close
        # (the answer holds it): the deadline is told which socket to shut.
        call.reading(conn.sock)
        response = conn.getresponse()
        raw = _read_bounded(response)
        if call.end():  # a body that runs to the close ends at the cut as well
            raise ProtocolError("the answer was cut at the call's deadline")
    except BaseException as error:
        _drop(conn, response)  # half used: of no use to the next call
        if not isinstance(error, OSError | http.client.HTTPException | HTTPError):
            raise
        if call.cut:
            late = TimeoutError(f"no whole answer within {call.seconds:g}s")
            raise TransportFailedError(Stage.SENT, "ReadTimeout", late) from error
        raise TransportFailedError(Stage.SENT, _name(error, writing), error) from error
    cut = len(raw) > MAX_ANSWER_BYTES
    if cut:
        _drop(conn, response)  # its rest is never read
    encoding = response.headers.get("Content-Encoding")
    return HTTPResponse(
        body=raw if cut else _decoded(raw, encoding),
        headers=response.headers,
        status=response.status,
        reason=response.reason,
        preload_content=False,
        decode_content=False,
    )


def _drop(conn: HTTPConnection, response: BaseHTTPResponse | None) -> None:
    """Both closed: an answer that ran to the close holds the socket, not conn."""
    if response is not None:
        response.close()
    conn.close()


def check_proxy(base_url: str) -> None:
    """ValueError, naming the variable, when the environment names a proxy for
    this provider that cannot be used: start-up says so, where a role building
    its client would crash, and be restarted, over and over."""
    url = _parsed(base_url)
    if url is not None and url.host:
        _proxy_for(url)


def _proxy_for(url: Url) -> Url | None:
    """The proxy the environment names for this provider (`HTTPS_PROXY`,
    `HTTP_PROXY`, `NO_PROXY`, as Python's urllib reads them: NO_PROXY holds names
    and domain suffixes), or None. Never for this machine (as Go's clients): no
    proxy reaches a sandbox on our loopback, and a laptop's global HTTP_PROXY must
    not break `make run`."""
    proxy = urllib.request.getproxies().get(str(url.scheme))
    if (
        not proxy
        or _loopback(str(url.host))
        or urllib.request.proxy_bypass(f"{url.host}:{url.port or ''}")
    ):
        return None
    parsed = _parsed(proxy if "://" in proxy else f"http://{proxy}")
    if parsed is None or parsed.scheme not in ("http", "https") or not parsed.host:
        variable = f"{str(url.scheme).upper()}_PROXY"
        raise ValueError(f"{variable} must name a proxy as http://host:port")
    return parsed


def _login(url: Url) -> str | None:
    """The URL's userinfo as `user:password`, percent-decoded; None when it has none."""
    if not url.auth:
        return None
    user, _, password = url.auth.partition(":")
    return f"{unquote(user)}:{unquote(password)}"


def _loopback(host: str) -> bool:
    if host.rstrip(".") == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:  # a name
        return False
    mapped = getattr(ip, "ipv4_mapped", None)  # ::ffff:127.0.0.1
    return ip.is_loopback or ip.is_unspecified or bool(mapped and mapped.is_loopback)


def json_body(body: Mapping[str, object]) -> bytes:
    """Compact UTF-8 JSON, as httpx's `json=` wrote it; NaN is no JSON."""
    return json.dumps(
        body, ensure_ascii=False, separators=(",", ":"), allow_nan=False
    ).encode()


def json_answer(response: BaseHTTPResponse) -> Any:
    """The body read as JSON; ValueError when it is not (empty included), when it
    was cut at MAX_ANSWER_BYTES, and when it nests deeper than the parser goes:
    every caller reads ValueError as "unreadable", and a RecursionError past them
    would read as a bug."""
    data = response.data or b""  # None: a response built bodiless
    if len(data) > MAX_ANSWER_BYTES:
        raise ValueError(f"the provider's answer is over {MAX_ANSWER_BYTES} bytes")
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("the provider's answer nests too deep to read") from None


def _read_bounded(response: BaseHTTPResponse) -> bytes:
    """The body as it came on the wire, cut after MAX_ANSWER_BYTES (so endless
    empty gzip members cost no more than a large body); decoded after, bounded
    too (`_decoded`)."""
    raw = b""
    while len(raw) <= MAX_ANSWER_BYTES:  # a read may return less than asked
        more = response.read(MAX_ANSWER_BYTES + 1 - len(raw), decode_content=False)
        if not more:  # the end (a body cut short raised IncompleteRead)
            break
        raw += more
    return raw


def _decoded(raw: bytes, encoding: str | None) -> bytes:
    """gzip or zlib-deflate unpacked to at most MAX_ANSWER_BYTES + 1 bytes (more
    is cut, and `json_answer` refuses it); what does not unpack whole, or is
    packed otherwise, is kept as it came: unreadable, so the status decides. We
    ask for none (http.client sends `Accept-Encoding: identity`)."""
    if (encoding or "identity").strip().lower() not in ("gzip", "x-gzip", "deflate"):
        return raw
    unpack = zlib.decompressobj(wbits=32 + zlib.MAX_WBITS)  # either header
    try:
        data = unpack.decompress(raw, MAX_ANSWER_BYTES + 1)
    except zlib.error:
        return raw
    return data if unpack.eof or len(data) > MAX_ANSWER_BYTES else raw


def reason_phrase(response: BaseHTTPResponse) -> str:
    """The server's own reason phrase, the standard one when it sent none."""
    if response.reason is not None:
        return response.reason
    try:
        return HTTPStatus(response.status).phrase
    except ValueError:
        return ""


def succeeded(response: BaseHTTPResponse) -> bool:
    return 200 <= response.status < 300  # noqa: PLR2004 - the 2xx range


def retry_after(value: str | None) -> float | None:
    """RFC 9110: delay-seconds or an HTTP-date; None when absent or unreadable.
    At most a day: a provider's "come back in 10**400 seconds" is no delay a
    broker can keep (a NAK's delay is an int64 of nanoseconds)."""
    if value is None:
        return None
    seconds = value.strip()
    if seconds.isascii() and seconds.isdigit():  # "²" is a digit to str.isdigit
        return min(float(seconds), MAX_RETRY_AFTER_S)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, OverflowError):
        return None
    if when.tzinfo is None:
        return None
    return min(max(0.0, (when - datetime.now(UTC)).total_seconds()), MAX_RETRY_AFTER_S)


def described(failed: TransportFailedError) -> str:
    """What failed, in the words Club stores: no address survives (a provider's
    error may quote one; docs/guarantees.md)."""
    said = without_addresses(str(failed.cause))
    return f"{failed.name}: {said}" if said else failed.name


def _parsed(base_url: str) -> Url | None:
    try:
        return parse_url(base_url)
    except LocationParseError:
        return None


def _name(error: BaseException, writing: bool) -> str:
    # http.client's own errors come as they are; urllib3 wraps what it met
    # reading the body in a ProtocolError, whose last argument is the cause.
    if isinstance(error, ProtocolError) and error.args:
        error = error.args[-1]
    if isinstance(error, TimeoutError | ReadTimeoutError):
        return "WriteTimeout" if writing else "ReadTimeout"
    if isinstance(error, http.client.HTTPException):
        return "RemoteProtocolError"  # closed early, or not HTTP
    return "NetworkError"


class _WholeHead(http.client.HTTPResponse):
    """http.client takes a status line or header block cut by the peer's close for
    a whole one ("HTTP/1.1 201 Cre" reads as a 201 with no body): refuse it, as
    httpx (h11) did; the body is checked against its length by urllib3. Installed
    through http.client's `response_class` attribute, not by a subclass of ours."""

    def begin(self) -> None:
        fp, lines = self.fp, _WholeLines(self.fp)
        self.fp = lines  # type: ignore[assignment]  # a file in all it reads
        try:
            super().begin()
        finally:
            if self.fp is not None:  # None: http.client closed it (a bad status)
                self.fp = fp


class _WholeLines:
    def __init__(self, fp: Any) -> None:
        self._fp, self._first = fp, True

    def __getattr__(self, name: str) -> Any:  # close(), as http.client may
        return getattr(self._fp, name)

    def readline(self, limit: int = -1) -> bytes:
        line: bytes = self._fp.readline(limit)
        # Too long is http.client's to say; no line at all, first, is its
        # RemoteDisconnected; any other line must end before the close.
        cut = not line.endswith(b"\n") and len(line) != limit
        if cut and (line or not self._first):
            raise http.client.IncompleteRead(line)
        self._first = False
        return line
