"""A hung database is abandoned: every role carries on within 30 s.

Each role runs as its own process with its own `application_name` (libpq's
`PGAPPNAME`), so the PostgreSQL backends serving it are found in
`pg_stat_activity` and stopped with SIGSTOP, each while idle: the server accepts
the role's bytes and never answers — a stuck pooler, a frozen VM. Keepalives
never fire (the kernel answers them) and `statement_timeout` never reaches the
client; new connections, served by new backends, work. Every call on a hung
connection ends at its client-side deadline (statement timeout 15 s + 3 s), its
connection is closed, and the role's other idle connections to that server are
replaced unasked (adapters/postgres/call_deadline.py). The backends are resumed
at the end of each test, whatever happens.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from uuid import UUID

import httpx
import pytest
import sqlalchemy as sa

from entrypoints.runtime.bootstrap import Container
from projections import statistics
from tests.api_client import ClubClient
from tests.hung_backends import of_application, stopped
from tests.identity import ADMIN
from tests.integration.sandbox_process import SandboxProcess
from tests.stack import FAST_FAULTS, FAST_SAGA, Stack, eventually, scratch_for

WITHIN_S = 30.0  # the promise: every role carries on within this of the hang
REQUEST_S = 10.0  # one HTTP call's own limit (the API answers 503 at 5 s)
WARM = 8  # requests at once before the hang: each pool holds several connections
STARTED_S = 90.0  # the first work through a role just started, on a loaded machine


def app_name(role: str) -> str:
    return f"club-hung-{role}"


@pytest.fixture(scope="module")
def stack(
    migrated: tuple[str, str], email_sandbox: SandboxProcess, request: Any
) -> Iterator[Stack]:
    env = FAST_FAULTS | FAST_SAGA | {"CLUB_EMAIL_PROVIDER_URL": email_sandbox.url}
    stack = Stack(*migrated, scratch_for(request, "logs"), **env)
    try:
        stack.start("payment")
        for role in ("api", "relay", "projector", "worker", "saga"):
            stack.start(role, PGAPPNAME=app_name(role))
        yield stack
    finally:
        stack.stop_all()


def client(stack: Stack) -> ClubClient:
    return ClubClient(stack.base, timeout=REQUEST_S)


def enroll(stack: Stack, lesson: str, student: str) -> httpx.Response:
    with client(stack) as club:
        return club.enroll(lesson, student)


def confirmed(container: Container, lesson: str) -> int:
    """The statistics projection's count: the relay and a projector carried it."""
    with container.engine.connect() as conn:
        count = conn.execute(
            sa.select(statistics.lessons.c.confirmed).where(
                statistics.lessons.c.lesson_id == UUID(lesson)
            )
        ).scalar()
    return int(count or 0)


def test_enrollments_into_any_lesson_succeed_again_within_30_s(
    stack: Stack, migrated: tuple[str, str]
) -> None:
    with client(stack) as club:
        hung_lesson = club.lesson(capacity=100)
        other_lesson = club.lesson(capacity=100)
        students = [club.student() for _ in range(WARM + 40)]
    # given: both of the API's pools hold several connections
    with ThreadPoolExecutor(WARM) as pool:
        warm = list(pool.map(lambda s: enroll(stack, hung_lesson, s), students[:WARM]))
    assert [r.status_code for r in warm] == [201] * WARM
    waiting = iter(students[WARM:])

    url = migrated[0]
    with stopped(url, of_application(url, app_name("api")), at_least=3):
        began = time.monotonic()  # when: every connection the API holds hangs
        # a request meets a hung connection: 503 at the request deadline
        assert enroll(stack, hung_lesson, next(waiting)).status_code == 503

        def both_enroll() -> bool:
            return all(
                enroll(stack, lesson, next(waiting)).status_code == 201
                for lesson in (hung_lesson, other_lesson)
            )

        # then: within 30 s of the hang, both lessons take enrollments again
        eventually(both_enroll, timeout=WITHIN_S - (time.monotonic() - began))
        assert time.monotonic() - began < WITHIN_S


def _enrolled_and_counted(stack: Stack, container: Container) -> Callable[[], bool]:
    """An enrollment, carried by the relay to the statistics projection."""
    with client(stack) as club:
        lesson = club.lesson()
        assert club.enroll(lesson, club.student()).status_code == 201
    return lambda: confirmed(container, lesson) == 1


def _emailed(stack: Stack, _container: Container) -> Callable[[], bool]:
    """An enrollment whose confirmation e-mail the worker sent."""
    with client(stack) as club:
        answer = club.enroll(club.lesson(), club.student())
        assert answer.status_code == 201, answer.text
    path = f"{stack.base}/enrollments/{answer.json()['enrollment_id']}"

    def sent() -> bool:
        shown = httpx.get(path, headers=ADMIN, timeout=REQUEST_S).json()
        notification = shown["notification"] or {}  # None: no worker took it yet
        return bool(notification.get("state") == "sent")

    return sent


def _bought(stack: Stack, _container: Container) -> Callable[[], bool]:
    """A purchase the saga charged and confirmed."""
    with client(stack) as club:
        answer = club.reserve(club.paid_lesson(), club.student())
        assert answer.status_code == 201, answer.text
    path = f"{stack.base}/purchases/{answer.json()['purchase_id']}"
    return lambda: httpx.get(path, headers=ADMIN).json()["status"] == "confirmed"


WORK: dict[str, Callable[[Stack, Container], Callable[[], bool]]] = {
    "relay": _enrolled_and_counted,
    "projector": _enrolled_and_counted,
    "worker": _emailed,
    "saga": _bought,
}


@pytest.mark.parametrize("role", list(WORK))
def test_a_role_carries_on_within_30_s_of_its_connections_hanging(
    role: str, stack: Stack, migrated: tuple[str, str], container: Container
) -> None:
    work = WORK[role]
    # given: the role has done this work, so its pools hold connections
    eventually(work(stack, container), timeout=STARTED_S)
    url = migrated[0]
    with stopped(url, of_application(url, app_name(role))):
        began = time.monotonic()  # when: every connection the role holds hangs
        done = work(stack, container)  # the API and the other roles are well
        # then: the role carries the new work through within 30 s of the hang
        eventually(done, timeout=WITHIN_S - (time.monotonic() - began))
        assert time.monotonic() - began < WITHIN_S
