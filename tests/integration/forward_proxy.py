"""An HTTP proxy as an egress proxy is one: absolute-form requests are forwarded,
CONNECT opens a tunnel. It records what it was asked for (no package here does),
and reaches every host it is asked for at `upstream`: the names it is given need
not resolve here, as a client behind a real one cannot resolve them either."""

from __future__ import annotations

import socket
import threading
from urllib.parse import urlsplit

from tests.integration.half_answer import serve_each


class ForwardProxy:
    def __init__(
        self, upstream: tuple[str, int], *, required_auth: str | None = None
    ) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.asked: list[str] = []  # each request line, as it came
        self._auth = required_auth  # a Proxy-Authorization value, or None
        serve_each(self.listener, self._serve)

    def close(self) -> None:
        self.listener.close()

    def _serve(self, client: socket.socket) -> None:
        with client:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = client.recv(65536)
                if not chunk:
                    return
                head += chunk
            head, _, rest = head.partition(b"\r\n\r\n")
            line, *headers = head.decode("latin-1").split("\r\n")
            self.asked.append(line)
            method, target, version = line.split(" ")
            given = {
                k.lower(): v.strip() for k, _, v in (h.partition(":") for h in headers)
            }
            if (
                self._auth is not None
                and given.get("proxy-authorization") != self._auth
            ):
                # The body is read first and the client left to close: a
                # socket closed with unread bytes is reset, and a reset can
                # destroy the 407 before the client reads it (as it did on CI).
                body = int(given.get("content-length", "0"))
                while len(rest) < body and (chunk := client.recv(65536)):
                    rest += chunk
                client.sendall(
                    b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                    b"Content-Length: 0\r\nConnection: close\r\n\r\n"
                )
                client.shutdown(socket.SHUT_WR)
                while client.recv(65536):
                    pass
                return
            if method == "CONNECT":
                with socket.create_connection(self.upstream) as upstream:
                    client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    _pipe(client, upstream, rest)
                return
            url = urlsplit(target)
            path = (url.path or "/") + (f"?{url.query}" if url.query else "")
            origin = f"{method} {path} {version}"
            # One request a connection (it is read here, then piped): the
            # upstream closes after answering, and the client opens another.
            kept = [
                h
                for h in headers
                if not h.lower().startswith(("proxy-", "connection:"))
            ] + ["Connection: close"]
            with socket.create_connection(self.upstream) as upstream:
                upstream.sendall(
                    "\r\n".join([origin, *kept]).encode("latin-1") + b"\r\n\r\n"
                )
                _pipe(client, upstream, rest)


def _pipe(client: socket.socket, upstream: socket.socket, first: bytes) -> None:
    """Both ways until either side closes (the client's first bytes sent first)."""
    if first:
        upstream.sendall(first)

    def down() -> None:
        try:
            while data := upstream.recv(65536):
                client.sendall(data)
        except OSError:
            pass
        finally:
            client.close()  # the upstream is done: so is the client's side

    threading.Thread(target=down, daemon=True).start()
    try:
        while data := client.recv(65536):
            upstream.sendall(data)
    except OSError:
        pass
