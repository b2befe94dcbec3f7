"""The API process as `club up` runs it refuses what the app's own tests refuse:
a foreign Host, a burst over the rate, more connections than it may hold."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import ExitStack
from urllib.parse import urlsplit
from uuid import uuid4

import httpx
import pytest

from entrypoints.runtime.roles import MOST_AT_ONCE
from tests.identity import as_teacher
from tests.stack import Stack, running_stack, scratch_for


@pytest.fixture(scope="module")
def api_only(
    migrated: tuple[str, str], request: pytest.FixtureRequest
) -> Iterator[Stack]:
    logs = scratch_for(request, "logs")
    with running_stack(
        migrated, logs, roles=("api",), CLUB_RATE_LIMIT="3/minute"
    ) as stack:
        yield stack


def test_a_foreign_host_is_refused(api_only: Stack) -> None:
    """DNS rebinding: a web page's own name in Host never reaches a route."""
    refused = httpx.get(f"{api_only.base}/healthz", headers={"Host": "evil.example"})
    assert refused.status_code == 400
    assert refused.json()["type"] == "/problems/host-not-allowed"
    assert httpx.get(f"{api_only.base}/healthz").status_code == 200


def test_a_burst_over_the_rate_is_429(api_only: Stack) -> None:
    caller = as_teacher(f"t-{uuid4().hex[:6]}")
    answers = [
        httpx.get(f"{api_only.base}/lessons/{uuid4()}", headers=caller)
        for _ in range(4)
    ]
    assert [a.status_code for a in answers] == [404, 404, 404, 429]
    assert int(answers[-1].headers["retry-after"]) >= 1


def test_past_the_connections_it_may_hold_it_answers_503(api_only: Stack) -> None:
    address = urlsplit(api_only.base)
    with ExitStack() as held:
        for _ in range(MOST_AT_ONCE):  # idle clients, each holding a place
            sock = socket.create_connection((address.hostname, address.port))
            held.enter_context(sock)
        crowded = httpx.get(f"{api_only.base}/healthz")
    assert crowded.status_code == 503
    assert httpx.get(f"{api_only.base}/healthz").status_code == 200
