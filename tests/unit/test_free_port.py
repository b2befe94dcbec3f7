"""Ports for embedded servers come from below the kernel's ephemeral range, where
no outgoing connection can take one between its choice and the server's bind."""

from __future__ import annotations

import socket

import pytest

from adapters.embedded.process import LOWEST_PORT, free_port, lowest_ephemeral_port

pytestmark = pytest.mark.unit


def test_a_free_port_is_below_the_ephemeral_range_and_bindable() -> None:
    low = lowest_ephemeral_port()
    for _ in range(50):
        port = free_port()
        assert LOWEST_PORT <= port < low
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))  # nobody holds it


def test_a_port_in_use_is_never_given() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", free_port()))
        held.listen()
        taken = held.getsockname()[1]
        assert all(free_port() != taken for _ in range(2000))
