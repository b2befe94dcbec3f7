"""Lose exactly one reply on the wire: a commit's, a PubAck, a consumer's ack."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from urllib.parse import urlsplit
from uuid import UUID, uuid4

import httpx
import pytest

from adapters.nats.consumer import ConsumerRunner
from adapters.nats.streams import EVENTS_STREAM, connect, ensure_consumer
from adapters.postgres.database import eventsourcing_env
from entrypoints.runtime import bootstrap
from entrypoints.runtime.api import create_app
from entrypoints.runtime.bootstrap import Container
from projections import statistics
from tests.faults.workload import expected_event_ids, stream_event_ids
from tests.identity import ADMIN, VERIFIER
from tests.integration.helpers import lesson_with_enrollments, make_relay, relay_all
from tests.live_server import serving
from tests.proxy import Proxy


def port_of(url: str) -> int:
    return int(urlsplit(url.split(",", maxsplit=1)[0]).port or 0)


@pytest.fixture
def events_via_proxy(migrated) -> Iterator[tuple[httpx.Client, Proxy, Container]]:
    """An API whose event store connection runs through the proxy; all else direct;
    behind a real server, which sends the deadline's 503 while the work goes on."""
    database_url = migrated[0]
    with Proxy(port_of(database_url)) as proxy:
        parts = urlsplit(database_url)
        login = parts.netloc.rpartition("@")[0]  # user, and password if any
        proxied = parts._replace(netloc=f"{login}@127.0.0.1:{proxy.port}")
        container = bootstrap.build(
            database_url, event_store_env=eventsourcing_env(proxied.geturl())
        )
        app = create_app(container, deadline_seconds=2, verifier=VERIFIER)
        with (
            serving(app) as base,
            httpx.Client(base_url=base, headers=ADMIN, timeout=60) as http,
        ):
            yield http, proxy, container
        container.close()


def test_a_lost_commit_reply_is_recognised_as_ours_on_retry(events_via_proxy) -> None:
    http, proxy, container = events_via_proxy
    student = f"s-{uuid4().hex[:8]}"
    assert http.put(
        f"/students/{student}", json={"email": "a@b.org", "name": "A"}
    ).is_success
    lesson = http.post(
        "/lessons",
        json={"title": "Net", "capacity": 1, "starts_at": "2026-12-01T10:00:00Z"},
    ).json()["lesson_id"]
    key = str(uuid4())

    # The enrollment's insert is one statement, its own transaction: its reply
    # is the commit's. Prepared, it names no SQL; its parameters carry the topic.
    proxy.trap_reply_to(b"Enrollment.Confirmed")
    lost = http.post(
        f"/lessons/{lesson}/enrollments",
        json={"student_id": student},
        headers={"Idempotency-Key": key},
    )
    assert proxy.trapped.is_set()
    assert lost.status_code == 503  # the server cannot know whether it committed
    assert lost.headers["retry-after"]
    assert container.app.get_lesson(UUID(lesson)).seats_taken == 1  # it did commit

    retried = http.post(
        f"/lessons/{lesson}/enrollments",
        json={"student_id": student},
        headers={"Idempotency-Key": key},
    )
    assert retried.status_code == 201  # ours, not lesson-full or already-enrolled
    assert container.app.get_lesson(UUID(lesson)).seats_taken == 1

    other = f"s-{uuid4().hex[:8]}"
    assert http.put(
        f"/students/{other}", json={"email": "b@b.org", "name": "B"}
    ).is_success
    reused = http.post(
        f"/lessons/{lesson}/enrollments",
        json={"student_id": other},
        headers={"Idempotency-Key": key},
    )
    assert reused.status_code == 422, reused.text  # not the first student's 201
    assert reused.json()["type"] == "/problems/idempotency-key-reused"


def test_a_read_stuck_on_a_silent_database_is_answered_503_by_the_deadline(
    events_via_proxy,
) -> None:
    """No TCP error ever comes: only the deadline can answer (issue #3's hang)."""
    http, proxy, container = events_via_proxy
    student = f"s-{uuid4().hex[:8]}"
    http.put(f"/students/{student}", json={"email": "a@b.org", "name": "A"})
    lesson = http.post(
        "/lessons",
        json={"title": "Net", "capacity": 5, "starts_at": "2026-12-01T10:00:00Z"},
    ).json()["lesson_id"]
    key = str(uuid4())

    def enroll() -> httpx.Response:
        return http.post(
            f"/lessons/{lesson}/enrollments",
            json={"student_id": student},
            headers={"Idempotency-Key": key},
        )

    proxy.set(down="blackhole")  # the database goes silent mid-conversation
    stuck = enroll()
    assert stuck.status_code == 503
    assert stuck.headers["retry-after"]
    assert stuck.json()["type"] == "/problems/temporarily-unavailable"
    assert "no answer within 2s" in stuck.json()["detail"]

    proxy.set()
    proxy.reset()  # the database is back; the stuck read fails and retries
    retries: list[int] = []
    deadline = time.monotonic() + 30
    retry_later = (409, 503)  # the first request still holds the key, or the lesson
    while (
        status := enroll().status_code
    ) in retry_later and time.monotonic() < deadline:
        retries.append(status)
        time.sleep(0.2)
    assert status == 201, retries
    assert container.app.get_lesson(UUID(lesson)).seats_taken == 1


def test_a_lost_puback_is_republished_and_deduplicated(container, migrated) -> None:
    database_url, nats_url = migrated
    lesson_with_enrollments(container, 5)

    async def body() -> None:
        with Proxy(port_of(nats_url)) as proxy:
            nc = await connect(proxy.url("nats"), name="relay-behind-proxy")
            relay = make_relay(container, nc, database_url, puback_timeout=1)
            proxy.set(down="blackhole")  # messages arrive; their PubAcks do not
            with pytest.raises(TimeoutError):
                await relay.relay_once()
            assert relay.position < container.app.recorder.max_notification_id()
            proxy.set()
            proxy.reset()  # the client reconnects on a clean stream
            # Meanwhile the relay's batches are refused, not buffered (its loop
            # backs off): publish once the client is back.
            while not (nc.is_connected and nc.stats["reconnects"] >= 1):
                await asyncio.sleep(0.05)
            await relay_all(relay)
            await nc.close()

    asyncio.run(body())
    published = stream_event_ids(migrated[1])
    assert published == expected_event_ids(container)  # each exactly once


class LoseAcks(ConsumerRunner):
    """The acks after the commit go nowhere: the client's outbound path is off."""

    proxy: Proxy

    async def _acknowledge(self, msgs) -> None:
        self.proxy.set(up="blackhole")
        await super()._acknowledge(msgs)


def test_a_lost_ack_is_redelivered_and_absorbed_by_the_inbox(
    container, migrated
) -> None:
    database_url, nats_url = migrated
    name = f"lost-ack-{uuid4().hex[:6]}"
    lesson_id = lesson_with_enrollments(container, 3)

    def confirmed() -> int:
        with container.engine.connect() as conn:
            return (
                conn.execute(
                    statistics.lessons.select().where(
                        statistics.lessons.c.lesson_id == lesson_id
                    )
                )
                .one()
                .confirmed
            )

    async def body() -> tuple:
        direct = await connect(nats_url, name="direct")
        await relay_all(make_relay(container, direct, database_url))
        await ensure_consumer(direct.jetstream(), name, ack_wait=1)
        with Proxy(port_of(nats_url)) as proxy:
            nc = await connect(proxy.url("nats"), name="consumer-behind-proxy")
            js = nc.jetstream()
            sub = await js.pull_subscribe_bind(durable=name, stream=EVENTS_STREAM)
            losing = LoseAcks(name=name, apply=statistics.apply, js=js,
                              engine=container.engine, fetch_timeout=1)  # fmt: skip
            losing.proxy = proxy
            first = await losing.poll(sub)
            after_first = confirmed()
            proxy.set()
            proxy.reset()
            await asyncio.sleep(1.5)  # past ack_wait: the server redelivers
            runner = ConsumerRunner(
                name=name, apply=statistics.apply, js=js, engine=container.engine,
                fetch_timeout=1,
            )  # fmt: skip
            again = await runner.poll(sub)
            await nc.close()
        await direct.close()
        return first, after_first, again

    first, after_first, again = asyncio.run(body())
    assert first.applied > 0
    assert again.duplicates == first.applied
    assert again.applied == 0
    assert confirmed() == after_first == 3


def test_a_keyless_write_past_the_deadline_is_told_its_outcome_is_unknown(
    events_via_proxy,
) -> None:
    """Without a key a retry would make a second lesson: the 503 must not invite it."""
    http, proxy, _ = events_via_proxy
    proxy.set(down="blackhole")
    late = http.post(
        "/lessons",
        json={"title": "Late", "capacity": 5, "starts_at": "2026-12-01T10:00:00Z"},
    )
    proxy.set()
    proxy.reset()
    assert late.status_code == 503
    assert late.json()["type"] == "/problems/outcome-unknown"
    assert "Idempotency-Key so that a retry is recognised" in late.json()["detail"]
    assert "retry-after" not in late.headers  # no invitation to repeat it blindly
