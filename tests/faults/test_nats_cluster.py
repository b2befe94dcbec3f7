"""The production broker in small (issue #13): three nats-servers on loopback form a
JetStream cluster, Club's streams keep three replicas, and the server that leads the
events stream and serves both clients is SIGKILLed while the real Relay publishes
from the event store and the real ConsumerRunner applies statistics. Nothing is
lost or doubled: every event once in the stream, the projection's total equal to
the event store's, one inbox row per event.

These need servers they may kill, so they always run a private cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime
from uuid import UUID, uuid4

import attrs
import nats.errors
import pytest
import sqlalchemy as sa
from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.api import ConsumerInfo, StreamInfo

from adapters.embedded.cluster import ClusterNode, EmbeddedNatsCluster
from adapters.nats.consumer import ConsumerRunner
from adapters.nats.relay import Relay
from adapters.nats.streams import (
    EVENTS_STREAM,
    REPLICAS_VARIABLE,
    STREAMS,
    connect,
    ensure_streams,
)
from adapters.postgres.tables import inbox
from application.commands import EnrollStudent, ScheduleLesson
from domain.student import StudentProfile
from entrypoints.runtime import bootstrap
from tests.faults.workload import confirmed_totals, expected_event_ids
from tests.integration.helpers import stream_messages
from tests.servers import scratch_dir

pytestmark = pytest.mark.timeout(60)

ENROLLMENTS = 300
PACE_S = 0.02  # between enrollments: ~6 s of steady flow
CONSUMER = "statistics"
ACK_WAIT_S = 3.0  # an ack lost with the killed server is redelivered soon


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedNatsCluster]:
    cluster = EmbeddedNatsCluster(scratch_dir("club-test-cluster-"))
    cluster.start()
    yield cluster
    cluster.stop()


@attrs.define
class Seen:
    """What the run observed, asserted on after the servers are quiet."""

    leader_after_kill: str = ""
    victim: str = ""
    stream_seq_at_kill: int = 0
    applied_at_kill: int = 0
    relay_moved_to: int | None = None
    consumer_moved_to: int | None = None
    stream_ids: list[str] = attrs.Factory(list)
    crashed: list[str] = attrs.Factory(list)  # the relay, the runner, the writer
    victim_caught_up: bool = False


def test_a_killed_node_loses_and_doubles_nothing(
    cluster: EmbeddedNatsCluster,
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(REPLICAS_VARIABLE, "3")  # as the compose file sets it
    bootstrap.migrate_database(database_url)
    made = asyncio.run(_admin(cluster.url, bootstrap.migrate_broker))
    # A process that ensures the streams without the variable (a role started by
    # hand, an old `club migrate`) must not shrink the cluster's streams.
    monkeypatch.delenv(REPLICAS_VARIABLE)
    kept = asyncio.run(_admin(cluster.url, ensure_streams))
    container = bootstrap.build(database_url, pool_size=4)
    try:
        seen = asyncio.run(_through_a_kill(cluster, container, database_url))
        expected = expected_event_ids(container)
        totals = confirmed_totals(container)
        with container.engine.connect() as conn:
            rows = conn.execute(
                sa.select(inbox.c.event_id).where(inbox.c.consumer == CONSUMER)
            )
            inbox_ids = [str(event_id) for (event_id,) in rows]
    finally:
        container.close()

    assert made == kept == {str(config.name): 3 for config in STREAMS}
    assert seen.crashed == []
    assert seen.leader_after_kill not in ("", "None", seen.victim)
    victim_port = next(n.port for n in cluster.nodes if n.name == seen.victim)
    # The kill fell in the middle of the flow, and both clients failed over.
    assert 0 < seen.stream_seq_at_kill < len(expected)
    assert 0 < seen.applied_at_kill < len(expected)
    assert seen.relay_moved_to not in (None, victim_port)
    assert seen.consumer_moved_to not in (None, victim_port)
    # Nothing lost, nothing doubled.
    assert len(seen.stream_ids) == len(set(seen.stream_ids))
    assert sorted(seen.stream_ids) == sorted(expected)
    assert totals == {"store": ENROLLMENTS, "projection": ENROLLMENTS}
    assert sorted(inbox_ids) == sorted(expected)
    assert seen.victim_caught_up  # restarted on its own store, it rejoined


async def _through_a_kill(
    cluster: EmbeddedNatsCluster, container: bootstrap.Container, database_url: str
) -> Seen:
    seen = Seen()
    admin = await connect(cluster.url, name="test-admin")
    relay_nc = await connect(cluster.url, name="test-relay")
    consumer_nc = await _connect_beside(relay_nc, cluster.url)
    victim = cluster.node_on(_port(relay_nc))
    assert victim is not None
    seen.victim = victim.name
    try:
        js = admin.jetstream()

        async def stream_leader() -> str:
            return _leader(await js.stream_info(EVENTS_STREAM))

        async def consumer_leader() -> str:
            return _leader(await js.consumer_info(EVENTS_STREAM, CONSUMER))

        await _lead_on(
            admin, victim, f"STREAM.LEADER.STEPDOWN.{EVENTS_STREAM}", stream_leader
        )
        await _lead_on(
            admin,
            victim,
            f"CONSUMER.LEADER.STEPDOWN.{EVENTS_STREAM}.{CONSUMER}",
            consumer_leader,
        )
        runner = ConsumerRunner(
            name=CONSUMER,
            apply=bootstrap.PROJECTIONS[CONSUMER][1],
            js=consumer_nc.jetstream(),
            engine=container.engine,
            ack_wait=ACK_WAIT_S,
        )
        relay = Relay(
            recorder=container.app.recorder,
            mapper=container.app.mapper,
            engine=container.engine,
            nc=relay_nc,
            listen_dsn=database_url,
            puback_timeout=2,
        )
        stop = asyncio.Event()
        roles = [
            asyncio.create_task(runner.run(stop)),
            asyncio.create_task(relay.run(stop)),
        ]
        halfway = threading.Event()
        writer = asyncio.create_task(
            asyncio.to_thread(_enroll, container, ENROLLMENTS, halfway)
        )
        try:
            assert await asyncio.to_thread(halfway.wait, 20), "enrolling stalled"
            await _until(lambda: _applied(container) > 0, "the first event applied")
            seen.stream_seq_at_kill = (
                await js.stream_info(EVENTS_STREAM)
            ).state.last_seq
            seen.applied_at_kill = _applied(container)
            cluster.kill(victim)
            await writer
            await _until(
                lambda: _applied(container) == len(expected_event_ids(container)),
                "every event applied after the kill",
                timeout=30,
            )
        finally:
            stop.set()
            ended = await asyncio.gather(*roles, writer, return_exceptions=True)
            seen.crashed = [repr(e) for e in ended if isinstance(e, BaseException)]
        seen.leader_after_kill = await stream_leader()
        seen.relay_moved_to = _port(relay_nc)
        seen.consumer_moved_to = _port(consumer_nc)
        seen.stream_ids = [m.headers["Nats-Msg-Id"] for m in await stream_messages(js)]
        await asyncio.to_thread(cluster.restart, victim)
        seen.victim_caught_up = await _all_replicas_current(js, len(seen.stream_ids))
    finally:
        for nc in (consumer_nc, relay_nc, admin):
            await nc.close()
    return seen


async def _admin(
    url: str, step: Callable[[JetStreamContext], Awaitable[None]]
) -> dict[str, int]:
    """Run a broker step as `club migrate` would; each stream's replica count after."""
    nc = await connect(url, name="test-admin")
    try:
        js = nc.jetstream()
        await step(js)
        return {
            str(config.name): (
                await js.stream_info(str(config.name))
            ).config.num_replicas
            or 1
            for config in STREAMS
        }
    finally:
        await nc.close()


async def _all_replicas_current(
    js: JetStreamContext, messages: int, timeout: float = 20
) -> bool:
    """Every replica of the events stream current again, holding every message."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(nats.errors.Error):
            info = await js.stream_info(EVENTS_STREAM)
            peers = info.cluster.replicas if info.cluster else None
            if (
                peers
                and len(peers) == 2  # the two followers
                and all(p.current and not p.offline for p in peers)
                and info.state.messages == messages
            ):
                return True
        await asyncio.sleep(0.2)
    return False


def _port(nc: Client) -> int | None:
    """The port of the node the client is connected to now."""
    return nc.connected_url.port if nc.connected_url else None


async def _connect_beside(first: Client, url: str) -> Client:
    """A second client on the same node as `first` (clients pick a node at random),
    so the one kill takes both the relay's and the consumer's server away."""
    for _ in range(50):
        nc = await connect(url, name="test-consumer")
        if _port(nc) == _port(first):
            return nc
        await nc.close()
    raise AssertionError("no client landed on the relay's node in 50 tries")


def _leader(info: StreamInfo | ConsumerInfo) -> str:
    return str(info.cluster.leader) if info.cluster else ""


async def _lead_on(
    nc: Client, node: ClusterNode, api: str, leader: Callable[[], Awaitable[str]]
) -> None:
    """Move a stream's or consumer's leadership to `node`: killing the leader is
    the harder case (an election, in-flight PubAcks and acks lost). Returns once
    the new leader answers, since requests made during the election time out."""
    body = f'{{"placement": {{"preferred": "{node.name}"}}}}'.encode()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        with contextlib.suppress(nats.errors.Error):
            if await leader() == node.name:
                return
            await nc.request(f"$JS.API.{api}", body, timeout=2)
        await asyncio.sleep(0.5)
    raise AssertionError(f"{api} did not move to {node.name}")


def _enroll(
    container: bootstrap.Container, count: int, halfway: threading.Event
) -> None:
    app = container.app
    lesson_id: UUID = app.schedule_lesson(
        ScheduleLesson(
            lesson_id=uuid4(),
            title="Cluster",
            capacity=count,
            starts_at=datetime(2026, 12, 1, tzinfo=UTC),
            price_cents=0,
        )
    )
    for n in range(count):
        student = f"c-{uuid4().hex[:10]}"
        container.students.save(
            StudentProfile.create(student_id=student, email="a@b.org", name="C")
        )
        app.enroll(
            EnrollStudent(lesson_id=lesson_id, student_id=student, request_id=student)
        )
        if n == count // 2:
            halfway.set()
        time.sleep(PACE_S)  # the flow lasts a few seconds, so the kill falls inside


def _applied(container: bootstrap.Container) -> int:
    with container.engine.connect() as conn:
        return int(
            conn.execute(
                sa.select(sa.func.count()).where(inbox.c.consumer == CONSUMER)
            ).scalar_one()
        )


async def _until(check: Callable[[], bool], what: str, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not await asyncio.to_thread(check):
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what}")
        await asyncio.sleep(0.1)
