"""The broker is not open to everyone (issue #9, item 6): on the embedded server as
`club up` configures it, only the relay may publish events, a consumer does its whole
job with its own credentials, and an anonymous client is turned away."""

from __future__ import annotations

import asyncio
import json
import stat
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import nats
import nats.errors
import nats.js.errors
import pytest
from nats.aio.client import Client

from adapters.embedded.nats import EmbeddedNats
from adapters.nats.authorization import authorization_block, role_users
from adapters.nats.consumer import ConsumerRunner
from adapters.nats.dlq import ALREADY_DELETED, DeadLetter, dead_letters
from adapters.nats.replay import ReplayReport, ReplayRequest, replay
from adapters.nats.streams import (
    DLQ_STREAM,
    EVENTS_STREAM,
    EVENTS_SUBJECTS,
    REPLAY_STREAM,
    connect,
    dead_letter_subject,
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


# What each role lacks (adapters/nats/authorization.py). The server drops a request
# its user may not make and says so: a permissions violation, no answer, nothing
# changed. Granted, each request here would be answered at once (a `no_wait` pull
# by a message or a 404, an ack sent with a reply subject by an empty message, any
# other API call by its JSON, an error included), and the writes among them would
# change a stream or a durable.

REFUSED_WAIT_S = 0.5  # a granted request is answered in milliseconds
DLQ_DELETE = f"$JS.API.STREAM.MSG.DELETE.{DLQ_STREAM}"
NO_WAIT = b'{"batch": 1, "no_wait": true}'
Request = tuple[str, bytes]  # subject, payload


def _json(**fields: object) -> bytes:
    return json.dumps(fields).encode()


def _create(stream: str, name: str | None, filter_subject: str) -> bytes:
    """A consumer create request: an update where the durable exists."""
    config: dict[str, object] = {
        "ack_policy": "explicit",
        "deliver_policy": "all",
        "filter_subject": filter_subject,
        "description": "not its own",
    }
    if name:
        config["durable_name"] = name
    return _json(stream_name=stream, config=config)


def _durable_rights(owner: str) -> list[Request]:
    """Creating (or reconfiguring) `owner`'s durables in each form nats-py and the
    server know, pulling from them, deleting one."""
    api = "$JS.API.CONSUMER"
    events, replays = f"{EVENTS_STREAM}.{owner}", f"{REPLAY_STREAM}.{owner}-replay"
    create = _create(EVENTS_STREAM, owner, EVENTS_SUBJECTS)
    return [
        (f"{api}.CREATE.{events}", create),
        (f"{api}.CREATE.{events}.{EVENTS_SUBJECTS}", create),  # with its filter
        (f"{api}.DURABLE.CREATE.{events}", create),
        (f"{api}.MSG.NEXT.{events}", NO_WAIT),
        (
            f"{api}.CREATE.{replays}",
            _create(REPLAY_STREAM, f"{owner}-replay", f"club.replay.{owner}.>"),
        ),
        (f"{api}.MSG.NEXT.{replays}", NO_WAIT),
        (f"{api}.DELETE.{events}", b""),
    ]


@pytest.fixture(scope="module")
def durables(guarded: EmbeddedNats) -> EmbeddedNats:
    """The guarded broker with every consumer's durables, as `club migrate` makes
    them."""

    async def migrate() -> None:
        nc = await connect(guarded.url_for("admin"), name="test-admin")
        try:
            await bootstrap.migrate_broker(nc.jetstream())
        finally:
            await nc.close()

    asyncio.run(migrate())
    return guarded


@pytest.fixture
def dead_letter(durables: EmbeddedNats) -> Iterator[int]:
    """A dead letter the notifications consumer wrote itself: its DLQ sequence."""

    async def write() -> int:
        url = durables.url_for("consumer-notifications")
        nc = await connect(url, name="test-notifications")
        try:
            original = {"Club-Original-Subject": "club.events.lesson.LessonScheduled"}
            ack = await nc.jetstream().publish(
                dead_letter_subject("notifications"), b"{}", headers=original
            )
            return int(ack.seq)
        finally:
            await nc.close()

    seq = asyncio.run(write())
    yield seq
    asyncio.run(_erase(durables.url_for("admin"), DLQ_STREAM, seq))


async def _erase(url: str, stream: str, *seqs: int) -> None:
    nc = await connect(url, name="test-admin")
    try:
        for seq in seqs:
            try:
                await nc.jetstream().delete_msg(stream, seq)
            except nats.js.errors.APIError as error:
                if error.err_code not in ALREADY_DELETED:
                    raise
    finally:
        await nc.close()


async def _broker_state(url: str) -> dict[str, object]:
    """Every stream's settings and content, every durable's settings and progress."""
    nc = await connect(url, name="test-state")
    try:
        js = nc.jetstream()
        state: dict[str, object] = {}
        for stream in await js.streams_info():
            name = str(stream.config.name)
            state[name] = (stream.config, stream.state)
            for c in await js.consumers_info(name):
                state[f"{name}/{c.name}"] = (
                    c.config, c.delivered, c.ack_floor, c.num_ack_pending,
                    c.num_redelivered, c.num_waiting, c.num_pending,
                )  # fmt: skip
        return state
    finally:
        await nc.close()


async def _ask(url: str, requests: list[Request]) -> tuple[list[str], list[str]]:
    """Which requests were answered, and the errors the server sent. Each has a
    reply subject of its own: a pulled message comes back under its stream subject,
    which nats-py's `request` would not match to its reply."""
    errors: list[Exception] = []
    nc = await _client(url, errors)
    own = inbox_prefix(urlsplit(url).username)
    try:
        replies = [await nc.subscribe(f"{own}.asked.{i}") for i in range(len(requests))]
        for (subject, payload), reply in zip(requests, replies, strict=True):
            await nc.publish(subject, payload, reply=reply.subject)
        await nc.flush()
        await asyncio.sleep(REFUSED_WAIT_S)
        answered = [
            subject
            for (subject, _), reply in zip(requests, replies, strict=True)
            if reply.pending_msgs
        ]
    finally:
        await nc.close()
    return answered, [str(e) for e in errors]


def _assert_refused(broker: EmbeddedNats, user: str, requests: list[Request]) -> None:
    admin = broker.url_for("admin")
    before = asyncio.run(_broker_state(admin))
    answered, errors = asyncio.run(_ask(broker.url_for(user), requests))
    assert answered == [], user
    assert errors == [
        f'nats: permissions violation for publish to "{subject.lower()}"'
        for subject, _ in requests
    ], user
    assert asyncio.run(_broker_state(admin)) == before, user


@pytest.mark.parametrize(
    "user",
    [
        "consumer-notifications",  # the dead letter's own consumer
        "consumer-statistics",
        "consumer-exports",  # a worker
        "relay",
    ],
)
def test_only_the_api_deletes_a_dead_letter(
    durables: EmbeddedNats, dead_letter: int, user: str
) -> None:
    _assert_refused(durables, user, [(DLQ_DELETE, _json(seq=dead_letter))])


def test_the_api_deletes_a_dead_letter(
    durables: EmbeddedNats, dead_letter: int
) -> None:
    """The control: the request the others are refused, granted, deletes it."""

    async def delete() -> tuple[list[str], list[str], bool]:
        answered, errors = await _ask(
            durables.url_for("api"), [(DLQ_DELETE, _json(seq=dead_letter))]
        )
        nc = await connect(durables.url_for("admin"), name="test-admin")
        try:
            await nc.jetstream().get_msg(DLQ_STREAM, dead_letter)
        except nats.js.errors.NotFoundError:
            return answered, errors, True
        finally:
            await nc.close()
        return answered, errors, False

    answered, errors, deleted = asyncio.run(delete())
    assert (answered, errors, deleted) == ([DLQ_DELETE], [], True)


OTHERS_DURABLES = {
    "consumer-statistics": [
        *_durable_rights("rosters"),
        (f"$JS.API.CONSUMER.CREATE.{EVENTS_STREAM}.intruder",  # a new durable
         _create(EVENTS_STREAM, "intruder", EVENTS_SUBJECTS)),
        (f"$JS.API.CONSUMER.CREATE.{EVENTS_STREAM}",  # an ephemeral
         _create(EVENTS_STREAM, None, EVENTS_SUBJECTS)),
        # Even its own: `club migrate` makes them, the admin deletes them.
        (f"$JS.API.CONSUMER.DELETE.{EVENTS_STREAM}.statistics", b""),
    ],
    "consumer-exports": _durable_rights("statistics"),  # a worker's user
    "api": _durable_rights("statistics"),
    "relay": _durable_rights("statistics"),
}  # fmt: skip


@pytest.mark.parametrize("user", list(OTHERS_DURABLES))
def test_no_user_creates_pulls_from_or_deletes_another_consumers_durable(
    durables: EmbeddedNats, user: str
) -> None:
    """A pull would take messages that are the owner's to ack; a create would
    reconfigure the owner's durable, or make one to read from."""
    _assert_refused(durables, user, OTHERS_DURABLES[user])


@pytest.fixture
def unacked(durables: EmbeddedNats) -> Iterator[str]:
    """An event the rosters consumer pulled and has not acked yet: its ack subject.
    Its owner acks it afterwards, the control: that subject acks."""
    url = durables.url_for("consumer-rosters")

    async def pull() -> str:
        relay = await connect(durables.url_for("relay"), name="test-relay")
        await relay.jetstream().publish("club.events.lesson.LessonScheduled", b"{}")
        await relay.close()
        nc = await _client(url, [])
        try:
            inbox = await nc.subscribe(f"{inbox_prefix('consumer-rosters')}.pulled")
            ask = _json(batch=1, expires=1_000_000_000)
            await nc.publish(
                f"$JS.API.CONSUMER.MSG.NEXT.{EVENTS_STREAM}.rosters",
                ask,
                reply=inbox.subject,
            )
            return str((await inbox.next_msg(timeout=2)).reply)
        finally:
            await nc.close()

    subject = asyncio.run(pull())
    assert subject.startswith(f"$JS.ACK.{EVENTS_STREAM}.rosters."), subject
    yield subject
    assert asyncio.run(_ask(url, [(subject, b"+ACK")])) == ([subject], [])


@pytest.mark.parametrize(
    "user", ["consumer-statistics", "consumer-exports", "api", "relay"]
)
def test_no_user_acks_another_consumers_message(
    durables: EmbeddedNats, unacked: str, user: str
) -> None:
    """Anyone else's ack would drop the event before rosters applied it."""
    _assert_refused(durables, user, [(unacked, b"+ACK")])


STREAM_RIGHTS = [
    ("$JS.API.STREAM.CREATE.INTRUDER",
     _json(name="INTRUDER", subjects=["intruder.>"], storage="memory")),
    (f"$JS.API.STREAM.UPDATE.{EVENTS_STREAM}",
     _json(name=EVENTS_STREAM, subjects=[EVENTS_SUBJECTS], storage="file",
           duplicate_window=1_000_000_000)),
    (f"$JS.API.STREAM.DELETE.{EVENTS_STREAM}", b""),
    (f"$JS.API.STREAM.DELETE.{DLQ_STREAM}", b""),
    (f"$JS.API.STREAM.DELETE.{REPLAY_STREAM}", b""),
    (f"$JS.API.STREAM.PURGE.{EVENTS_STREAM}", b"{}"),
    (f"$JS.API.STREAM.PURGE.{DLQ_STREAM}", b"{}"),
    # The API deletes dead letters, no event and no handed-back one.
    (f"$JS.API.STREAM.MSG.DELETE.{EVENTS_STREAM}", _json(seq=1)),
    (f"$JS.API.STREAM.MSG.DELETE.{REPLAY_STREAM}", _json(seq=1)),
]  # fmt: skip


@pytest.mark.parametrize("user", ["api", "relay", "consumer-statistics"])
def test_only_the_admin_manages_streams_or_deletes_events(
    durables: EmbeddedNats, dead_letter: int, user: str
) -> None:
    """`club migrate` (the admin user) makes the streams; a purge of the DLQ would
    find the dead letter at least."""
    _assert_refused(durables, user, STREAM_RIGHTS)


READS = {
    "consumer-statistics": [
        ("$JS.API.INFO", b""),
        (f"$JS.API.STREAM.INFO.{EVENTS_STREAM}", b""),
        (f"$JS.API.STREAM.INFO.{DLQ_STREAM}", b""),
        ("$JS.API.STREAM.NAMES", b"{}"),
        ("$JS.API.STREAM.LIST", b"{}"),
        (f"$JS.API.STREAM.MSG.GET.{DLQ_STREAM}",
         _json(last_by_subj=dead_letter_subject("notifications"))),
        (f"$JS.API.STREAM.MSG.GET.{EVENTS_STREAM}", _json(seq=1)),
        (f"$JS.API.CONSUMER.INFO.{EVENTS_STREAM}.rosters", b""),
        (f"$JS.API.CONSUMER.LIST.{EVENTS_STREAM}", b"{}"),
    ],
    "relay": [
        ("$JS.API.INFO", b""),
        (f"$JS.API.STREAM.INFO.{EVENTS_STREAM}", b""),
        (f"$JS.API.STREAM.MSG.GET.{DLQ_STREAM}",
         _json(last_by_subj=dead_letter_subject("notifications"))),
        (f"$JS.API.CONSUMER.INFO.{EVENTS_STREAM}.statistics", b""),
    ],
    # The API reads the events' and the dead letters' oldest entries only.
    "api": [(f"$JS.API.STREAM.MSG.GET.{REPLAY_STREAM}", _json(seq=1))],
}  # fmt: skip


@pytest.mark.parametrize("user", list(READS))
def test_only_the_api_reads_jetstreams_state(
    durables: EmbeddedNats, dead_letter: int, user: str
) -> None:
    _assert_refused(durables, user, READS[user])


@pytest.mark.xfail(
    strict=True,
    reason="nats-server sends an answer wherever the request's reply subject says,"
    " unchecked against the user's publish rights: a stream there stores it",
)
@pytest.mark.parametrize(
    ("user", "request_", "reply", "stream"),
    [
        # The server's answer to a read, stored as an event.
        ("api", (f"$JS.API.STREAM.INFO.{DLQ_STREAM}", b""), "club.events.forged",
         EVENTS_STREAM),
        # The PubAck of a permitted publish, as another consumer's dead letter.
        ("relay", ("club.events.lesson.LessonScheduled", b"{}"),
         dead_letter_subject("notifications"), DLQ_STREAM),
        # A pulled event itself, as another consumer's dead letter.
        ("consumer-rosters",
         (f"$JS.API.CONSUMER.MSG.NEXT.{EVENTS_STREAM}.rosters", NO_WAIT),
         dead_letter_subject("notifications"), DLQ_STREAM),
    ],
)  # fmt: skip
def test_no_user_has_the_server_answer_where_it_may_not_publish(
    durables: EmbeddedNats, user: str, request_: Request, reply: str, stream: str
) -> None:
    """A known gap that subject permissions cannot close (the server, not the user,
    publishes the answer): a JetStream API call, a pull, a publish to a stream may
    name any reply subject. Closing it takes the streams out of the users' account
    (JetStream in an account of its own, its API imported), not another right."""

    async def run() -> tuple[int, int]:
        relay = await connect(durables.url_for("relay"), name="test-relay")
        await relay.jetstream().publish("club.events.lesson.LessonScheduled", b"{}")
        await relay.close()  # an event to pull
        admin = await connect(durables.url_for("admin"), name="test-admin")
        js = admin.jetstream()
        try:
            before = int((await js.stream_info(stream)).state.last_seq)
            nc = await _client(durables.url_for(user), [])
            try:
                await nc.publish(*request_, reply=reply)
                await nc.flush()
                await asyncio.sleep(REFUSED_WAIT_S)
            finally:
                await nc.close()
            return before, int((await js.stream_info(stream)).state.last_seq)
        finally:
            await admin.close()

    before, after = asyncio.run(run())
    asyncio.run(
        _erase(durables.url_for("admin"), stream, *range(before + 1, after + 1))
    )
    assert after == before
