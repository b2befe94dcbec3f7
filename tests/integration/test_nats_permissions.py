"""The broker is not open to everyone (issue #9, item 6): on the embedded server as
`club up` configures it, only the relay may publish events, a consumer does its whole
job with its own credentials, and an anonymous client is turned away."""

from __future__ import annotations

import asyncio
import stat
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import urlsplit

import nats
import nats.errors
import pytest
from nats.aio.client import Client

from adapters.embedded.nats import EmbeddedNats
from adapters.nats.authorization import authorization_block, role_users
from adapters.nats.consumer import ConsumerRunner
from adapters.nats.dlq import DeadLetter, dead_letters
from adapters.nats.replay import ReplayReport, ReplayRequest, replay
from adapters.nats.streams import (
    EVENTS_STREAM,
    connect,
    ensure_streams,
    inbox_prefix,
)
from adapters.postgres.database import create_engine
from entrypoints.runtime import bootstrap
from tests.stack import club_env

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def guarded(guarded_nats: EmbeddedNats) -> EmbeddedNats:
    """The module's guarded broker, its streams made by the admin user."""
    asyncio.run(_streams(guarded_nats.url_for("admin")))
    return guarded_nats


async def _streams(url: str) -> None:
    nc = await connect(url, name="test-admin")
    try:
        await ensure_streams(nc.jetstream())
    finally:
        await nc.close()


async def _client(url: str, errors: list[Exception]) -> Client:
    """A client as Club's roles make one: replies under its user's own inbox."""

    async def collect(e: Exception) -> None:
        errors.append(e)

    user = urlsplit(url).username
    return await nats.connect(
        url, error_cb=collect, allow_reconnect=False, inbox_prefix=inbox_prefix(user)
    )


async def _violations(
    url: str, act: Callable[[Client], Awaitable[object]]
) -> list[Exception]:
    """What the server refused while `act` ran with `url`'s credentials."""
    errors: list[Exception] = []
    nc = await _client(url, errors)
    try:
        await act(nc)
        await nc.flush()
        await asyncio.sleep(0.3)  # the server's -ERR arrives after the PONG
    finally:
        await nc.close()
    return [e for e in errors if "permissions violation" in str(e).lower()]


async def _stored(url: str) -> int:
    nc = await connect(url, name="test-count")
    try:
        return int((await nc.jetstream().stream_info(EVENTS_STREAM)).state.messages)
    finally:
        await nc.close()


async def _forge(url: str) -> list[Exception]:
    """Publish a fake event with `url`'s credentials; the errors the server sent."""
    errors: list[Exception] = []
    nc = await _client(url, errors)
    try:
        await nc.publish("club.events.x", b'{"forged": true}')
        await nc.flush()
        await asyncio.sleep(0.3)  # the server's -ERR arrives after the PONG
    finally:
        await nc.close()
    return errors


def test_a_projector_cannot_publish_an_event(guarded: EmbeddedNats) -> None:
    admin = guarded.url_for("admin")
    before = asyncio.run(_stored(admin))
    for user in ("consumer-statistics", "api", "admin"):
        errors = asyncio.run(_forge(guarded.url_for(user)))
        assert any("permissions violation" in str(e).lower() for e in errors), user
    assert asyncio.run(_stored(admin)) == before


def test_the_relay_can_publish_an_event(guarded: EmbeddedNats) -> None:
    admin = guarded.url_for("admin")
    before = asyncio.run(_stored(admin))

    async def publish() -> None:
        nc = await connect(guarded.url_for("relay"), name="test-relay")
        try:
            ack = await nc.jetstream().publish("club.events.x", b"{}")
            assert ack.stream == EVENTS_STREAM
        finally:
            await nc.close()

    asyncio.run(publish())
    assert asyncio.run(_stored(admin)) == before + 1


@pytest.mark.parametrize("credentials", ["", "relay:wrong-password@"])
def test_a_client_without_credentials_cannot_connect(
    guarded: EmbeddedNats, credentials: str
) -> None:
    url = f"nats://{credentials}127.0.0.1:{guarded.port}"
    with pytest.raises((nats.errors.Error, OSError)) as refused:
        asyncio.run(_client(url, []))
    assert "authoriz" in str(refused.value).lower() or isinstance(
        refused.value, nats.errors.NoServersError
    )


def test_a_consumer_creates_pulls_acks_and_dead_letters_with_its_own_credentials(
    guarded: EmbeddedNats, database_url: str
) -> None:
    """Everything a projector does on the broker, through the real runner."""
    bootstrap.migrate_database(database_url)
    container = bootstrap.build(database_url, pool_size=2)
    _, apply = bootstrap.PROJECTIONS["statistics"]

    async def consume() -> tuple[int, list[Exception]]:
        errors: list[Exception] = []
        relay = await connect(guarded.url_for("relay"), name="test-relay")
        await relay.jetstream().publish("club.events.y", b"not json")  # a poison
        await relay.close()
        nc = await _client(guarded.url_for("consumer-statistics"), errors)
        runner = ConsumerRunner(
            name="statistics", apply=apply, js=nc.jetstream(), engine=container.engine
        )
        stop = asyncio.Event()
        task = asyncio.create_task(runner.run(stop))
        try:
            dead = await _dead_letters(guarded.url_for("admin"), "statistics")
        finally:
            stop.set()
            await task
            await nc.close()
        return dead, errors

    try:
        dead, errors = asyncio.run(consume())
    finally:
        container.close()
    assert dead >= 1
    assert errors == []


async def _dead_letters(url: str, consumer: str, timeout: float = 15) -> int:
    nc = await connect(url, name="test-dlq")
    try:
        js = nc.jetstream()
        for _ in range(int(timeout / 0.2)):
            try:
                info = await js.consumer_info(EVENTS_STREAM, consumer)
                dlq = await js.stream_info("CLUB_DLQ")
            except nats.errors.Error:
                await asyncio.sleep(0.2)
                continue
            if info.num_ack_pending == 0 and dlq.state.messages:
                return int(dlq.state.messages)
            await asyncio.sleep(0.2)
        return 0
    finally:
        await nc.close()


def test_credentials_and_config_are_private(guarded: EmbeddedNats) -> None:
    for path in (guarded.credentials, guarded.root / "nats.conf"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert guarded.passwords["relay"] in guarded.credentials.read_text()


def test_the_compose_broker_has_the_same_users_and_permissions() -> None:
    """deploy/nats.conf is the embedded block with passwords from the environment."""
    users = role_users(bootstrap.CONSUMERS)
    from_env = {u.name: f"$CLUB_NATS_{_var(u.name)}_PASSWORD" for u in users}
    assert (
        authorization_block(users, from_env) in (REPO / "deploy/nats.conf").read_text()
    )
    compose = (REPO / "docker-compose.yml").read_text()
    for user in users:
        assert f"CLUB_NATS_{_var(user.name)}_PASSWORD" in compose


def _var(user: str) -> str:
    return user.upper().replace("-", "_")


def test_a_role_with_a_wrong_password_says_so_and_exits(
    guarded: EmbeddedNats, database_url: str
) -> None:
    """Refused credentials are a setting to fix, not a broker to wait for."""
    wrong = f"nats://relay:not-the-password@127.0.0.1:{guarded.port}"
    answer = subprocess.run(
        [sys.executable, "-m", "entrypoints.cli", "relay"],
        env=club_env(database_url, wrong), capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert answer.returncode == 2, answer.stderr
    assert "NATS refused the user and password in CLUB_NATS_URL" in answer.stderr
    assert "not-the-password" not in answer.stderr + answer.stdout


def _publish(subject: str) -> Callable[[Client], Awaitable[object]]:
    return lambda nc: nc.publish(subject, b"{}")


def _subscribe(subject: str) -> Callable[[Client], Awaitable[object]]:
    return lambda nc: nc.subscribe(subject)


@pytest.mark.parametrize(
    ("user", "subject"),
    [
        ("consumer-statistics", "club.dlq.notifications"),  # another's dead letter
        ("consumer-statistics", "club.dlq.relay"),
        ("consumer-notifications", "club.dlq.rosters"),
        ("relay", "club.dlq.statistics"),
        ("api", "club.dlq.statistics"),
        ("consumer-statistics", "club.replay.statistics.x"),  # a forged hand-back
        ("relay", "club.replay.rosters.x"),
    ],
)
def test_no_user_writes_another_consumers_dead_letters_or_replays(
    guarded: EmbeddedNats, user: str, subject: str
) -> None:
    refused = asyncio.run(_violations(guarded.url_for(user), _publish(subject)))
    assert len(refused) == 1, (user, subject)


@pytest.mark.parametrize(
    ("user", "subject"),
    [
        ("consumer-statistics", "_INBOX.>"),  # every role's replies and messages
        ("consumer-statistics", "_INBOX.api.>"),
        ("consumer-statistics", "_INBOX.consumer-notifications.>"),
        ("api", "_INBOX.relay.>"),
        ("relay", "_INBOX.>"),
        ("api", "club.events.>"),
    ],
)
def test_no_user_reads_another_users_inbox(
    guarded: EmbeddedNats, user: str, subject: str
) -> None:
    refused = asyncio.run(_violations(guarded.url_for(user), _subscribe(subject)))
    assert len(refused) == 1, (user, subject)


def test_each_user_reads_its_own_inbox_and_writes_its_own_dead_letters(
    guarded: EmbeddedNats,
) -> None:
    """The control: the rights each role has are granted."""
    for user, own in [
        ("consumer-statistics", "club.dlq.statistics"),
        ("relay", "club.dlq.relay"),
    ]:
        url = guarded.url_for(user)

        async def act(nc: Client, own: str = own, user: str = user) -> None:
            await nc.subscribe(f"{inbox_prefix(user)}.>")
            original = {"Club-Original-Subject": "club.events.lesson.LessonScheduled"}
            await nc.publish(own, b"{}", headers=original)  # as a dead letter is

        assert asyncio.run(_violations(url, act)) == [], user


def test_the_api_replays_a_dead_letter_for_the_operators_page(
    guarded: EmbeddedNats, database_url: str
) -> None:
    """The page's confirm step, through the real replay, as the API's own user: it
    hands each entry back on CLUB_REPLAY and deletes it from the DLQ (under `club
    up` it was refused: a 503, a failed audit row, the entry left in the DLQ)."""
    bootstrap.migrate_database(database_url)
    engine = create_engine(database_url, pool_size=1)

    async def run() -> tuple[ReplayReport, list[DeadLetter]]:
        admin = await connect(guarded.url_for("admin"), name="test-admin")
        await bootstrap.migrate_broker(admin.jetstream())
        await admin.close()
        consumer = await connect(guarded.url_for("consumer-statistics"), name="t")
        await consumer.jetstream().publish(
            "club.dlq.statistics",
            b"{}",
            headers={
                "Club-Original-Subject": "club.events.lesson.LessonScheduled",
                "Club-Reason": "unreadable",
            },
        )
        await consumer.close()
        api = await connect(guarded.url_for("api"), name="test-api")
        try:
            js = api.jetstream()
            asked = ReplayRequest(
                consumer="statistics", operator="ops-page", reason="fixed", batch=1000
            )
            report = await replay(js, engine, asked)
            return report, [e async for e in dead_letters(js, "statistics")]
        finally:
            await api.close()

    try:
        report, left = asyncio.run(run())
    finally:
        engine.dispose()
    assert report.outcome == "finished"
    assert report.replayed >= 1
    assert report.replayed == len(report.matched)
    assert left == []
