"""Shared steps for tests that drive the relay and consumers against real servers."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar
from uuid import UUID, uuid4

from nats.aio.client import Client
from nats.js import JetStreamContext

from adapters.nats.relay import Relay
from adapters.nats.streams import EVENTS_STREAM, connect
from application.commands import EnrollStudent, ScheduleLesson
from domain.student import StudentProfile
from entrypoints.bootstrap import Container

T = TypeVar("T")


def run(coro: Awaitable[T]) -> T:
    async def main() -> T:
        return await coro

    return asyncio.run(main())


async def with_js(
    url: str, body: Callable[[JetStreamContext, Client], Awaitable[T]]
) -> T:
    nc = await connect(url, name="club-test")
    try:
        return await body(nc.jetstream(), nc)
    finally:
        await nc.close()


def make_relay(
    container: Container, js: JetStreamContext, url: str, **kw: Any
) -> Relay:
    return Relay(
        recorder=container.app.recorder,
        mapper=container.app.mapper,
        engine=container.engine,
        js=js,
        listen_dsn=url,
        **kw,
    )


async def relay_all(relay: Relay) -> None:
    """Publish everything there is, then hand the lease to whoever relays next."""
    while await relay.relay_once():
        pass
    assert relay.epoch is not None, "this relay never held the lease"
    await relay.release()


def lesson_with_enrollments(container: Container, enrollments: int) -> UUID:
    app = container.app
    lesson_id = app.schedule_lesson(
        ScheduleLesson(
            lesson_id=uuid4(),
            title="Yoga",
            capacity=max(enrollments, 1),
            starts_at=datetime(2026, 12, 1, tzinfo=UTC),
            price_cents=0,
        )
    )
    for n in range(enrollments):
        student = f"s-{uuid4().hex[:8]}-{n}"
        container.students.save(
            StudentProfile.create(student_id=student, email="a@b.org", name="A")
        )
        app.enroll(
            EnrollStudent(lesson_id=lesson_id, student_id=student, request_id=student)
        )
    return lesson_id


async def stream_messages(js: JetStreamContext) -> list[Any]:
    info = await js.stream_info(EVENTS_STREAM)
    first, last = info.state.first_seq, info.state.last_seq
    if info.state.messages == 0:
        return []
    return [await js.get_msg(EVENTS_STREAM, seq) for seq in range(first, last + 1)]
