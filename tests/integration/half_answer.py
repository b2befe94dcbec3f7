"""A server that reads one request, starts an answer, then hangs up: the answers a
provider's HTTP client must class as unknown or transient, never as a result."""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Protocol, TypeVar


class HalfAnswer:
    def __init__(self, reply: bytes) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.requests = 0
        self.reply = reply
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn, suppress(ConnectionError):
                read_request(conn)
                self.requests += 1
                conn.sendall(self.reply)

    def close(self) -> None:
        self.listener.close()


def read_request(conn: socket.socket) -> bytes:
    """One whole request (its head returned). Read before answering: urllib3
    writes head and body apart, and a socket closed with the body unread is
    reset, which can destroy the answer before the client reads it."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            raise ConnectionError("the client closed before a whole request")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = re.search(rb"(?im)^content-length: *(\d+)", head)
    missing = (int(length[1]) if length else 0) - len(body)
    while missing > 0:
        chunk = conn.recv(missing)
        if not chunk:
            raise ConnectionError("the client closed before a whole body")
        missing -= len(chunk)
    return head


def serve_each(
    listener: socket.socket, handle: Callable[[socket.socket], None]
) -> None:
    """Each connection `listener` accepts handled in a thread of its own (one held
    open does not stop the next), until the listener is closed."""

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()


class Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=Closable)


@contextmanager
def client_of(
    reply: bytes, make_client: Callable[[str], C]
) -> Iterator[tuple[C, HalfAnswer]]:
    """A client on a HalfAnswer server answering `reply`; both closed after."""
    server = HalfAnswer(reply)
    client = make_client(server.url)
    try:
        yield client, server
    finally:
        client.close()
        server.close()
