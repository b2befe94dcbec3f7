"""The whole-call deadline's watchdog, on bare sockets (the HTTP client's tests
drip real answers: tests/integration/test_email_adapters.py)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager

from adapters.providers.call_deadline import Call


class Connection:
    """As an http.client connection: its socket is None until it connects."""

    sock: object | None = None


@contextmanager
def socket_pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    ours, theirs = socket.socketpair()
    ours.settimeout(5)
    with ours, theirs:
        yield ours, theirs


def test_a_deadline_that_found_no_socket_yet_shuts_the_one_that_comes() -> None:
    """Past the deadline while the name still resolved (no socket, no timeout of
    its own): the socket that comes after is shut, not left unbounded."""
    conn = Connection()
    call = Call(0.05)
    call.attach(conn)
    time.sleep(0.2)
    assert call.cut
    with socket_pair() as (ours, _):
        conn.sock = ours
        assert ours.recv(1) == b""  # shut down under the reader
    assert call.end()


def test_tls_inside_tls_is_shut_through_its_transport() -> None:
    """Through an https proxy urllib3 reads via an SSLTransport over the socket."""

    class Transport:
        def __init__(self, sock: socket.socket) -> None:
            self.socket = sock

    with socket_pair() as (ours, _):
        conn = Connection()
        conn.sock = Transport(ours)
        call = Call(0.05)
        call.attach(conn)
        assert ours.recv(1) == b""


def test_an_ended_call_is_never_cut_and_a_failing_one_stops_no_other() -> None:
    class Broken(Call):
        def expire(self) -> None:
            raise RuntimeError("a bug in one call")

    Broken(0.01).attach(Connection())
    with socket_pair() as (ours, theirs), socket_pair() as (other, _):
        ended, running = Connection(), Connection()
        ended.sock, running.sock = ours, other
        first, second = Call(0.05), Call(0.1)
        first.attach(ended)
        second.attach(running)
        assert not first.end()
        assert other.recv(1) == b""  # the watchdog outlived the broken call
        theirs.sendall(b"x")
        assert ours.recv(1) == b"x"  # the ended call's socket was left alone
    assert second.end()
