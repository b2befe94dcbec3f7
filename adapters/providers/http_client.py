"""One bounded HTTP client for a provider: every phase has a timeout and a whole
call a deadline (call_deadline), so a provider that hangs, or answers a byte at a
time, costs a timeout, never a worker or a saga.

Both provider adapters (e-mail and payment) send through `ProviderPool`, a urllib3
pool at about half of httpx's CPU per request
(docs/decisions/2026-11-30-email-provider-over-urllib3.md), which says how far a
failed request got: that decides whether its outcome is unknown. The answer's
reading shared by both (JSON, `Retry-After`, a failure's words) is here too.
"""

from __future__ import annotations

import email.utils
import http.client
import ipaddress
import json
import socket
import threading
import urllib.request
import zlib
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from http import HTTPStatus
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from urllib3 import ProxyManager, Timeout, connection, connectionpool, make_headers
from urllib3.exceptions import (
    ClosedPoolError,
    ConnectTimeoutError,
    EmptyPoolError,
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

if TYPE_CHECKING:  # urllib3's connection protocol, named for types only
    from urllib3._base_connection import BaseHTTPConnection

MAX_RETRY_AFTER_S = 86_400.0
# A provider answers in a few hundred bytes (an error page, a few KB): more is
# not read, so a provider gone wrong, or a URL pointing at a file server, costs
# this much memory a call, not the size of what it streams.
MAX_ANSWER_BYTES = 64 * 1024
PROXY_AUTHENTICATION_REQUIRED = 407


class TransportFailedError(Exception):
    """A request that got no answer: `stage` says how far it got, `name` what failed
    in httpx's words (ConnectError, ReadTimeout, RemoteProtocolError...), so the
    errors Club stores read the same whichever client met them."""

    def __init__(self, stage: Stage, name: str, cause: Exception) -> None:
        super().__init__(f"{name}: {cause}")
        self.stage, self.name, self.cause = stage, name, cause


class ProviderPool:
    """Kept-alive connections to one provider, shared by the threads that call it.

    `retries=False`: no hidden resend, a POST that left and got no answer is the
    caller's to reconcile. A pooled connection the provider closed while idle is
    seen (urllib3 polls its socket when taking it) and replaced before anything is
    written to it. At most `connections` at once; a caller who finds none free
    waits up to the read timeout, then nothing was sent (as httpx's pool timeout).
    A proxy the environment names (`HTTP(S)_PROXY`, `NO_PROXY`) is used
    (`_proxy_for`): a deployment whose way out is an egress proxy needs no other
    setting.
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
        options: dict[str, Any] = {
            "timeout": Timeout(connect=connect_timeout_s, read=read_timeout_s),
            "maxsize": connections,
            "block": True,
            "retries": False,
        }
        self._prefix = (url.path or "").rstrip("/")
        self._proxy = _proxy_for(url)
        if self._proxy is None:
            pool = HTTPSConnectionPool if url.scheme == "https" else HTTPConnectionPool
            self._pool: connectionpool.HTTPConnectionPool = pool(
                url.host, url.port, **options
            )
        else:
            self._proxy.pool_classes_by_scheme = POOLS_BY_SCHEME
            self._proxy.connection_pool_kw.update(options)
            self._pool = self._proxy.connection_from_url(base_url)
            # Through a forwarding proxy (an http provider), the request line
            # names the whole URL; through a CONNECT tunnel, the path alone.
            if url.scheme == "http":
                port = f":{url.port}" if url.port else ""
                self._prefix = f"http://{url.host}{port}{self._prefix}"
        self._forwarded = self._proxy is not None and url.scheme == "http"
        self._wait_s = read_timeout_s
        # A whole call, once it has its connection: connecting, a silence as long
        # as the read timeout before the head, and as long again for the rest.
        self._call_s = connect_timeout_s + 2 * read_timeout_s
        # Credentials in the URL's userinfo are sent as Basic auth, as httpx did.
        login = _login(url)
        self._headers = make_headers(basic_auth=login) if login else {}

    def close(self) -> None:
        self._pool.close()
        if self._proxy is not None:
            self._proxy.clear()

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> BaseHTTPResponse:
        """The answer, read (its body up to MAX_ANSWER_BYTES + 1: `json_answer`
        refuses one that long); raises `TransportFailedError` when none came."""
        call = _calls.current = Call(self._call_s)
        try:
            response = self._pool.urlopen(
                method,
                self._prefix + path,
                body=body,
                headers=self._headers | (headers or {}),
                retries=False,
                redirect=False,
                assert_same_host=False,  # a forwarding proxy's pool: not the host
                preload_content=False,
                pool_timeout=self._wait_s,  # type: ignore[arg-type]  # a float works
            )
            answer = _read_bounded(response, call)
        except ConnectFailedError as error:
            raise TransportFailedError(
                Stage.NOT_SENT, error.name, error.cause
            ) from error
        except EmptyPoolError as error:
            raise TransportFailedError(Stage.NOT_SENT, "PoolTimeout", error) from error
        except ClosedPoolError:
            raise  # used after close(): a bug, not the provider's answer
        except HTTPError as error:  # the request was being written or answered
            if call.cut:
                late = TimeoutError(f"no whole answer within {call.seconds:g}s")
                raise TransportFailedError(Stage.SENT, "ReadTimeout", late) from error
            raise TransportFailedError(Stage.SENT, _name(error), error) from error
        finally:
            call.end()
            _calls.current = None
        if self._forwarded and answer.status == PROXY_AUTHENTICATION_REQUIRED:
            # The proxy's own refusal, not the provider's: it was never asked.
            refused = OSError("407 Proxy Authentication Required: our login refused")
            raise TransportFailedError(Stage.NOT_SENT, "ProxyError", refused)
        return answer


def check_proxy(base_url: str) -> None:
    """ValueError, naming the variable, when the environment names a proxy for
    this provider that cannot be used: start-up says so, where a role building
    its client would crash, and be restarted, over and over."""
    url = _parsed(base_url)
    if url is not None and url.host:
        _proxy_for(url)


def _proxy_for(url: Url) -> ProxyManager | None:
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
    login = _login(parsed)
    return ProxyManager(
        parsed._replace(auth=None).url,
        num_pools=1,
        proxy_headers=make_headers(proxy_basic_auth=login) if login else None,
    )


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


def _read_bounded(response: BaseHTTPResponse, call: Call) -> BaseHTTPResponse:
    """The status and headers as they came, the body cut after MAX_ANSWER_BYTES
    of the wire (so endless empty gzip members cost no more than a large body)
    and decoded here, bounded too. Read whole, the connection goes back to the
    pool; cut, it is closed (the rest is never read)."""
    raw = b""
    try:
        while len(raw) <= MAX_ANSWER_BYTES:  # a read may return less than asked
            more = response.read(MAX_ANSWER_BYTES + 1 - len(raw), decode_content=False)
            if not more:  # the end (a body cut short raised IncompleteRead)
                break
            raw += more
        if call.end():  # a body that runs to the close ends at the cut as well
            raise ProtocolError("the answer was cut at the call's deadline")
    except BaseException:
        response.close()  # half read: of no use to the next request
        response.release_conn()
        raise
    cut = len(raw) > MAX_ANSWER_BYTES
    if cut:
        response.close()
    response.release_conn()
    encoding = response.headers.get("Content-Encoding")
    return HTTPResponse(
        body=raw if cut else _decoded(raw, encoding),
        headers=response.headers,
        status=response.status,
        reason=response.reason,
        preload_content=False,
        decode_content=False,
    )


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


def _name(error: HTTPError) -> str:
    if isinstance(error, ReadTimeoutError):
        return "ReadTimeout"
    if isinstance(error, ProtocolError):  # the cause is the last argument
        cause = error.args[-1] if error.args else None
        if isinstance(cause, TimeoutError):  # a read timeout is ReadTimeoutError
            return "WriteTimeout"
        if isinstance(cause, http.client.HTTPException):
            return "RemoteProtocolError"  # closed early, or not HTTP
        return "NetworkError"
    return type(error).__name__


class ConnectFailedError(Exception):
    """Raised by our connections' connect() (TCP and TLS): urllib3 lets it through
    unwrapped, so "nothing was written" is known for sure, whatever the cause."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(str(cause))
        timed_out = isinstance(cause, TimeoutError) or (  # TLS, or TCP:
            isinstance(cause, ConnectTimeoutError)
            and not isinstance(cause, NewConnectionError)  # its subclass, oddly
        )
        self.name = "ConnectTimeout" if timed_out else "ConnectError"
        self.cause = cause


class _WholeHead(http.client.HTTPResponse):
    """http.client takes a status line or header block cut by the peer's close for
    a whole one ("HTTP/1.1 201 Cre" reads as a 201 with no body): refuse it, as
    httpx (h11) did; the body is checked against its length by urllib3."""

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


def _connect(connect: Callable[[], None]) -> None:
    try:
        connect()
    # Refused, timed out, DNS, TLS handshake; a proxy's CONNECT answer unread
    # (http.client's BadStatusLine): nothing reached the provider in any of them.
    except (OSError, HTTPError, http.client.HTTPException) as error:
        raise ConnectFailedError(error) from error


# Named as urllib3's own: the names show in the errors Club stores.
class HTTPConnection(connection.HTTPConnection):
    response_class = _WholeHead

    def connect(self) -> None:
        _connect(super().connect)

    def getresponse(self) -> HTTPResponse:  # type: ignore[override]  # as urllib3's
        _reading(self.sock)
        return super().getresponse()


class HTTPSConnection(connection.HTTPSConnection):
    response_class = _WholeHead

    def connect(self) -> None:
        _connect(super().connect)

    def getresponse(self) -> HTTPResponse:  # type: ignore[override]  # as urllib3's
        _reading(self.sock)
        return super().getresponse()


class _Calls(threading.local):
    current: Call | None = None  # the call this thread is making, if any


_calls = _Calls()


def _timed(conn: BaseHTTPConnection) -> BaseHTTPConnection:
    """The connection a call took starts the call's clock (call_deadline)."""
    if _calls.current is not None:
        _calls.current.attach(conn)
    return conn


def _reading(sock: socket.socket | None) -> None:
    if _calls.current is not None:
        _calls.current.reading(sock)


def _ended(conn: BaseHTTPConnection | None) -> BaseHTTPConnection | None:
    """A connection goes back to the pool (urllib3 does it as the answer's last
    byte is read): the call ends first, so its deadline never cuts the next."""
    if _calls.current is not None:
        _calls.current.end()
    return conn


class HTTPConnectionPool(connectionpool.HTTPConnectionPool):
    ConnectionCls = HTTPConnection

    def _get_conn(self, timeout: float | None = None) -> BaseHTTPConnection:
        return _timed(super()._get_conn(timeout))

    def _put_conn(self, conn: BaseHTTPConnection | None) -> None:
        super()._put_conn(_ended(conn))


class HTTPSConnectionPool(connectionpool.HTTPSConnectionPool):
    ConnectionCls = HTTPSConnection

    def _get_conn(self, timeout: float | None = None) -> BaseHTTPConnection:
        return _timed(super()._get_conn(timeout))

    def _put_conn(self, conn: BaseHTTPConnection | None) -> None:
        super()._put_conn(_ended(conn))


POOLS_BY_SCHEME = {"http": HTTPConnectionPool, "https": HTTPSConnectionPool}
