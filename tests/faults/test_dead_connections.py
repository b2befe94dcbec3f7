"""A pooled connection the server closed never fails the next enrollment.

No connection is pinged before use (docs/decisions/2026-11-30-no-pre-ping.md): the
read-model pool looks for what the server said on closing, the event store's
recorder retries a read, and an insert that never reached COMMIT, on a fresh
connection. Each test closes every connection the API holds between two
enrollments — a restart (fast, immediate) or pg_terminate_backend — and the second
enrollment must still answer 201, promptly, and count once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from uuid import UUID, uuid4

import psycopg
import pytest

from adapters.embedded.nats import EmbeddedNats
from adapters.embedded.postgres import EmbeddedPostgres
from entrypoints.runtime.bootstrap import Container, migrate
from tests.api_client import ClubClient
from tests.servers import fresh_database, scratch_dir
from tests.stack import Stack

PROMPTLY_S = 3.0  # a pre-ping's backoff or a pool timeout would take longer


@pytest.fixture(scope="module")
def pg() -> Iterator[EmbeddedPostgres]:
    server = EmbeddedPostgres(scratch_dir("club-dead-conns-") / "pg", durable=False)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def migrated(pg: EmbeddedPostgres) -> Iterator[tuple[str, str]]:
    nats = EmbeddedNats(scratch_dir("club-dead-conns-nats-"), sync_always=False)
    nats.start()
    with fresh_database(pg.url) as url:
        migrate(url, nats.url)
        yield url, nats.url
    nats.stop()


@pytest.fixture(scope="module")
def api(migrated: tuple[str, str]) -> Iterator[str]:
    stack = Stack(*migrated, scratch_dir("club-dead-conns-logs-"))
    stack.start("api")
    yield stack.base
    stack.stop_all()


def _restart(pg: EmbeddedPostgres, *, immediate: bool) -> Callable[[str], None]:
    def close_all(_url: str) -> None:
        pg.stop(immediate=immediate)
        pg.start()

    return close_all


def _terminate_backends(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        ended = conn.execute(
            # Waits (up to 5 s) until each backend has exited: its connection is
            # dead before the next request, not dying during it.
            "SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
    assert ended is not None
    assert ended[0] > 0  # the API's pools were open


@pytest.mark.parametrize("fault", ["fast restart", "immediate restart", "terminate"])
def test_the_enrollment_after_its_connections_died_answers_201(
    fault: str,
    pg: EmbeddedPostgres,
    migrated: tuple[str, str],
    api: str,
    container_for: Callable[[str], Container],
) -> None:
    close_all = {
        "fast restart": _restart(pg, immediate=False),
        "immediate restart": _restart(pg, immediate=True),
        "terminate": _terminate_backends,
    }[fault]
    with ClubClient(api) as club:
        lesson = club.lesson(capacity=20)
        students = [club.student() for _ in range(9)]
    # given: both pools hold several idle connections (eight enrollments at once)
    with ThreadPoolExecutor(8) as pool:
        first = list(pool.map(lambda s: _enroll(api, lesson, s), students[:8]))
    assert [r[0] for r in first] == [201] * 8

    close_all(migrated[0])  # when: the server closes every one of them

    key = str(uuid4())
    status, seconds = _enroll(api, lesson, students[8], key)
    assert status == 201, f"{fault}: {status}"  # then: no request failed for it
    assert seconds < PROMPTLY_S, f"{fault}: {seconds:.1f}s"
    repeat, _ = _enroll(api, lesson, students[8], key)
    assert repeat == 201  # the same answer, replayed
    app = container_for(migrated[0]).app
    assert app.get_lesson(UUID(lesson)).seats_taken == 9  # and each counted once


@pytest.mark.parametrize("fault", ["immediate restart", "terminate"])
def test_a_write_that_meets_a_dead_connection_first_answers_201(
    fault: str, pg: EmbeddedPostgres, migrated: tuple[str, str], api: str
) -> None:
    """A new lesson is an insert with no read of the event store before it: the
    dead connection is met by the insert, which had sent no COMMIT."""
    close_all = {
        "immediate restart": _restart(pg, immediate=True),
        "terminate": _terminate_backends,
    }[fault]
    with ClubClient(api) as club:
        club.lesson()  # given: the event store's pool is open
        close_all(migrated[0])  # when
        began = time.monotonic()
        lesson = club.lesson()  # then: asserts its 201 and where it is
        assert time.monotonic() - began < PROMPTLY_S
        assert club.request("GET", f"/lessons/{lesson}").status_code == 200


def _enroll(
    api: str, lesson: str, student: str, key: str | None = None
) -> tuple[int, float]:
    with ClubClient(api) as club:
        began = time.monotonic()
        response = club.enroll(lesson, student, key)
        return response.status_code, time.monotonic() - began
