"""A client that holds a connection without finishing its request's head is cut.

uvicorn alone waits for ever for a silent connection or a head sent a byte at a
time (slowloris): a few hundred such clients take every place `limit_concurrency`
allows. The API process answers them `408` and closes after HEAD_SECONDS.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import pytest

from entrypoints.runtime.head_deadline import HeadDeadlineProtocol
from tests.stack import Stack, running_stack, scratch_for

HEAD_SECONDS = HeadDeadlineProtocol.head_seconds
HEALTH = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


@pytest.fixture(scope="module")
def api_only(
    migrated: tuple[str, str], request: pytest.FixtureRequest
) -> Iterator[Stack]:
    with running_stack(migrated, scratch_for(request, "logs"), roles=("api",)) as s:
        yield s


def connect(base: str) -> socket.socket:
    address = urlsplit(base)
    sock = socket.create_connection((address.hostname, address.port), timeout=5)
    sock.settimeout(HEAD_SECONDS + 10)
    return sock


def read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes (a timeout fails the test)."""
    received = b""
    while chunk := sock.recv(4096):
        received += chunk
    return received


def one_response(sock: socket.socket) -> bytes:
    """One whole response: its head, then as many bytes as it says it has."""
    received = b""
    while b"\r\n\r\n" not in received:
        received += sock.recv(4096)
    head, _, body = received.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += sock.recv(4096)
    return head


def cut_after(sock: socket.socket, started: float) -> tuple[bytes, float]:
    with sock:
        return read_until_closed(sock), time.monotonic() - started


def test_silent_and_unfinished_heads_are_answered_408_and_closed(
    api_only: Stack,
) -> None:
    started = time.monotonic()
    silent = connect(api_only.base)
    unfinished = connect(api_only.base)
    unfinished.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    kept_alive = connect(api_only.base)
    kept_alive.sendall(HEALTH)
    first_answer = one_response(kept_alive)
    assert first_answer.startswith(b"HTTP/1.1 200"), first_answer
    kept_alive.sendall(b"GET /healthz HTTP/1.1\r\nHo")  # then nothing
    second_started = time.monotonic()

    with ThreadPoolExecutor(3) as pool:
        silent_cut = pool.submit(cut_after, silent, started)
        unfinished_cut = pool.submit(cut_after, unfinished, started)
        kept_alive_cut = pool.submit(cut_after, kept_alive, second_started)
        for future in (silent_cut, unfinished_cut, kept_alive_cut):
            answer, waited = future.result()
            assert answer.startswith(b"HTTP/1.1 408"), answer
            # The head's own deadline, not the 5 s keep-alive timeout.
            assert HEAD_SECONDS - 1 <= waited <= HEAD_SECONDS + 5, waited


def test_a_head_sent_slowly_within_the_deadline_is_served(api_only: Stack) -> None:
    with connect(api_only.base) as sock:
        for line in HEALTH.splitlines(keepends=True):
            sock.sendall(line)
            time.sleep(1)  # the client's own pace: three lines over ~3 s
        answer = one_response(sock)
    assert answer.startswith(b"HTTP/1.1 200"), answer
