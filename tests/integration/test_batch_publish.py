"""A batch's PubAcks, counted on one subscription: every message stored, or the
batch fails; an abandoned batch's late acks never complete a newer one."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit
from uuid import uuid4

import attrs
import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import ConnectionReconnectingError, MaxPayloadError
from nats.js import JetStreamContext
from nats.js.api import DiscardPolicy, StreamConfig
from nats.js.errors import NoStreamResponseError

from adapters.embedded.process import free_port
from adapters.nats.batch_publish import BatchPublisher, Outgoing, PubAckError
from adapters.nats.streams import connect
from tests.proxy import Proxy


def on_a_stream(
    nats_url: str,
    body: Callable[[Client, str], Awaitable[None]],
    *,
    via: str | None = None,
    **config: object,
) -> None:
    """`body(nc, subject)` with a stream of its own taking `subject`; the client
    connects `via` another URL (a proxy) when given."""

    async def main() -> None:
        nc = await connect(via or nats_url, name="batch-test")
        js = nc.jetstream()
        name = f"BATCH_{uuid4().hex[:8]}"
        await js.add_stream(StreamConfig(name=name, subjects=[f"{name}.>"], **config))
        try:
            await body(nc, f"{name}.x")
            assert (await js.stream_info(name)).state.messages >= 0
        finally:
            await js.delete_stream(name)
            await nc.close()

    asyncio.run(main())


async def fast_stream(js: JetStreamContext, prefix: str) -> str:
    """A second stream, with fast ingest, beside the test's own; its name."""
    name = f"{prefix}_{uuid4().hex[:8]}"
    await js.add_stream(
        StreamConfig(name=name, subjects=[f"{name}.>"], allow_batched=True)
    )
    return name


def messages(
    subject: str, count: int, *, ids: list[str] | None = None
) -> list[Outgoing]:
    ids = ids or [str(uuid4()) for _ in range(count)]
    stream = subject.split(".", maxsplit=1)[0]
    return [Outgoing(subject, b"{}", {"Nats-Msg-Id": i}, stream) for i in ids]


def test_every_message_of_a_batch_is_stored_before_it_is_done(nats_url: str) -> None:
    async def body(nc: Client, subject: str) -> None:
        publisher = BatchPublisher(nc)
        ids = [str(uuid4()) for _ in range(300)]
        await asyncio.wait_for(await publisher.send(messages(subject, 300, ids=ids)), 5)
        # Sent again (a relay's retry): duplicates are acknowledged, stored once.
        await asyncio.wait_for(await publisher.send(messages(subject, 300, ids=ids)), 5)
        info = await nc.jetstream().stream_info(subject.split(".", maxsplit=1)[0])
        assert info.state.messages == 300
        await asyncio.wait_for(await publisher.send([]), 1)  # nothing to wait for
        await publisher.close()

    on_a_stream(nats_url, body)


def test_a_refused_message_fails_the_batch(nats_url: str) -> None:
    async def body(nc: Client, subject: str) -> None:
        publisher = BatchPublisher(nc)
        with pytest.raises(PubAckError, match="maximum messages"):
            await asyncio.wait_for(await publisher.send(messages(subject, 3)), 5)

    on_a_stream(nats_url, body, max_msgs=2, discard=DiscardPolicy.NEW)


def test_an_abandoned_batchs_acks_never_complete_the_next(nats_url: str) -> None:
    async def body(nc: Client, subject: str) -> None:
        publisher = BatchPublisher(nc)
        await publisher.send(messages(subject, 50))  # abandoned: never awaited
        # The next goes where no stream listens; the 50 acks arriving first are
        # the old batch's and must not count for it.
        nowhere = messages(f"nowhere-{uuid4().hex[:6]}.x", 50)
        with pytest.raises(NoStreamResponseError):
            await asyncio.wait_for(await publisher.send(nowhere), 5)

    on_a_stream(nats_url, body)


def test_a_puback_naming_another_stream_never_counts(nats_url: str) -> None:
    """A reply aimed at the relay's inbox from elsewhere — here a real PubAck of a
    stream the message was not meant for — cannot pass for the one awaited."""

    async def body(nc: Client, subject: str) -> None:
        publisher = BatchPublisher(nc)
        meant_elsewhere = [
            attrs.evolve(m, stream="CLUB_EVENTS") for m in messages(subject, 3)
        ]
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(await publisher.send(meant_elsewhere), 1)

    on_a_stream(nats_url, body)


async def replies_to(nc: Client, publisher: BatchPublisher) -> list[Msg]:
    """Every reply the server sends the publisher's inbox, seen beside it."""
    await publisher.send([])  # subscribes: the inbox exists from here
    seen: list[Msg] = []

    async def keep(msg: Msg) -> None:
        seen.append(msg)

    await nc.subscribe(f"{publisher._prefix}.>", cb=keep)
    return seen


async def _until_at_least(count: Callable[[], int], expected: int) -> int:
    """`count()` once it reaches `expected`, or after 5 s: a subscription's
    callbacks run in a task of their own, which may still be behind the
    publisher's reply after a flush."""

    async def enough() -> None:
        while count() < expected:
            await asyncio.sleep(0.01)

    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(enough(), 5)
    return count()


async def settled(seen: list[Msg], expected: int) -> int:
    """How many replies `seen` holds once `expected` have arrived and any more
    have had 50 ms to."""
    await _until_at_least(seen.__len__, expected)
    await asyncio.sleep(0.05)
    return len(seen)


async def one_by_one(
    seen: list[Msg], publisher: BatchPublisher, *, at_least: int
) -> int:
    """How many replies went to a single message's subject (`<inbox>.<batch>.<n>`,
    not a fast batch's `...fail...`), waiting up to 5 s for `at_least`."""

    def count() -> int:
        head = len(publisher._prefix) + 1
        return sum(len(m.subject[head:].split(".")) == 2 for m in seen)

    return await _until_at_least(count, at_least)


def test_a_backlog_goes_as_one_fast_batch_and_duplicates_stay_out(
    nats_url: str,
) -> None:
    async def body(nc: Client, subject: str) -> None:
        publisher = BatchPublisher(nc)
        seen = await replies_to(nc, publisher)
        ids = [str(uuid4()) for _ in range(300)]
        await asyncio.wait_for(await publisher.send(messages(subject, 300, ids=ids)), 5)
        await nc.flush()
        # The batch's start and its commit: not one PubAck a message.
        assert await settled(seen, 2) == 2, [m.data for m in seen]
        # Sent again with 100 new ones after them (a republish after a crash):
        # the 300 stored are recognised, the 100 stored once, in order.
        again = ids + [str(uuid4()) for _ in range(100)]
        await asyncio.wait_for(
            await publisher.send(messages(subject, 400, ids=again)), 5
        )
        js = nc.jetstream()
        stream = subject.split(".", maxsplit=1)[0]
        assert (await js.stream_info(stream)).state.messages == 400
        stored = [await js.get_msg(stream, seq) for seq in (1, 300, 301, 400)]
        assert [m.headers and m.headers["Nats-Msg-Id"] for m in stored] == [
            again[0],
            again[299],
            again[300],
            again[399],
        ]

    on_a_stream(nats_url, body, allow_batched=True)


def test_a_stream_without_fast_ingest_takes_the_batch_ack_by_ack(
    nats_url: str,
) -> None:
    async def body(nc: Client, subject: str) -> None:
        publisher = BatchPublisher(nc)
        seen = await replies_to(nc, publisher)
        # Refused whole as a fast batch, then sent again one PubAck a message.
        await asyncio.wait_for(await publisher.send(messages(subject, 100)), 5)
        stream = subject.split(".", maxsplit=1)[0]
        assert (await nc.jetstream().stream_info(stream)).state.messages == 100
        await nc.flush()
        seen.clear()
        await asyncio.wait_for(await publisher.send(messages(subject, 100)), 5)
        await nc.flush()
        # The next batch goes ack by ack from the start.
        assert await settled(seen, 100) == 100
        assert (await nc.jetstream().stream_info(stream)).state.messages == 200

    on_a_stream(nats_url, body)


def test_a_fast_batch_cut_short_fails_and_the_next_goes_ack_by_ack(
    nats_url: str,
) -> None:
    async def body(nc: Client, subject: str) -> None:
        publisher = BatchPublisher(nc)
        seen = await replies_to(nc, publisher)
        with pytest.raises(PubAckError):
            await asyncio.wait_for(await publisher.send(messages(subject, 100)), 5)
        await nc.flush()
        seen.clear()
        # The retry never depends on the path that failed.
        with pytest.raises(PubAckError, match="maximum messages"):
            await asyncio.wait_for(await publisher.send(messages(subject, 100)), 5)
        # The batch fails at its first refusal; the other refusals are still on
        # their way, and the first batch's may trail in beside them.
        assert await one_by_one(seen, publisher, at_least=50) >= 50

    on_a_stream(
        nats_url, body, allow_batched=True, max_msgs=50, discard=DiscardPolicy.NEW
    )


def test_a_batch_for_two_streams_goes_ack_by_ack(nats_url: str) -> None:
    async def body(nc: Client, subject: str) -> None:
        js = nc.jetstream()
        other = await fast_stream(js, "OTHER")
        try:
            publisher = BatchPublisher(nc)
            seen = await replies_to(nc, publisher)
            mixed = messages(subject, 40) + messages(f"{other}.x", 40)
            await asyncio.wait_for(await publisher.send(mixed), 5)
            await nc.flush()
            assert await settled(seen, 80) == 80
            assert (await js.stream_info(other)).state.messages == 40
        finally:
            await js.delete_stream(other)

    on_a_stream(nats_url, body, allow_batched=True)


@pytest.mark.parametrize(
    ("subject", "headers"),
    [
        ("club.events.x", {"Club-Reason": "fine\r\nPUB club.events.forged 2\r\nhi"}),
        ("club.events.x", {"Club-Reason": "a lone\nline feed"}),
        ("club.events.x", {"Bad: Key": "v"}),
        ("club.events.x x", {}),
        ("club.events.x\r\nPUB forged 0", {}),
        ("club.events.x\u00a0PUB", {}),
        ("club.events.é", {}),
        ("", {}),
    ],
)
def test_a_message_that_could_end_its_frame_is_refused_where_it_is_built(
    subject: str, headers: dict[str, str]
) -> None:
    """Frames go to the wire as built: no subject or header may smuggle a command."""
    with pytest.raises(ValueError, match="malformed"):
        Outgoing(subject, b"{}", headers, "S")


def test_a_fast_batch_abandoned_at_its_timeout_makes_the_next_go_ack_by_ack(
    nats_url: str,
) -> None:
    async def body(nc: Client, subject: str) -> None:
        publisher = BatchPublisher(nc)
        seen = await replies_to(nc, publisher)
        # What `wait_for` does at the relay's PubAck timeout: cancel the future.
        (await publisher.send(messages(subject, 100))).cancel()
        await nc.flush()
        await asyncio.sleep(0.2)  # its start and commit replies, dropped
        seen.clear()
        await asyncio.wait_for(await publisher.send(messages(subject, 100)), 5)
        await nc.flush()
        # One PubAck a message: not the path that timed out.
        assert await settled(seen, 100) == 100
        # And the one after a completed batch goes fast again.
        seen.clear()
        await asyncio.wait_for(await publisher.send(messages(subject, 100)), 5)
        await nc.flush()
        assert await settled(seen, 2) == 2

    on_a_stream(nats_url, body, allow_batched=True)


def test_a_stream_without_fast_ingest_leaves_the_others_fast(nats_url: str) -> None:
    async def body(nc: Client, subject: str) -> None:
        js = nc.jetstream()
        fast = await fast_stream(js, "FAST")
        try:
            publisher = BatchPublisher(nc)
            seen = await replies_to(nc, publisher)
            await asyncio.wait_for(await publisher.send(messages(subject, 50)), 5)
            await nc.flush()
            seen.clear()
            await asyncio.wait_for(await publisher.send(messages(f"{fast}.x", 50)), 5)
            await nc.flush()
            assert await settled(seen, 2) == 2  # start and commit: still a fast batch
            assert (await js.stream_info(fast)).state.messages == 50
        finally:
            await js.delete_stream(fast)

    on_a_stream(nats_url, body)  # this one without allow_batched


def test_a_message_over_max_payload_with_its_headers_is_refused(
    nats_url: str,
) -> None:
    async def body(nc: Client, subject: str) -> None:
        publisher = BatchPublisher(nc)
        [small] = messages(subject, 1)
        # The payload alone fits; with its header block the frame would not.
        payload = b"x" * (nc.max_payload - len(small.head) + 1)
        with pytest.raises(MaxPayloadError):
            await publisher.send([attrs.evolve(small, payload=payload)])
        fits = payload[:-1]
        await asyncio.wait_for(
            await publisher.send([attrs.evolve(small, payload=fits)]), 5
        )

    on_a_stream(nats_url, body, max_msg_size=-1)


def test_nothing_is_buffered_while_the_client_reconnects(nats_url: str) -> None:
    """A relay retrying through a broker outage would otherwise grow the client's
    write buffer with every attempt and flood the broker when it is back."""
    server = urlsplit(nats_url)
    assert server.port is not None
    with Proxy(server.port) as proxy:
        via = nats_url.replace(
            f"{server.hostname}:{server.port}", f"127.0.0.1:{proxy.port}"
        )

        async def body(nc: Client, subject: str) -> None:
            publisher = BatchPublisher(nc)
            await asyncio.wait_for(await publisher.send(messages(subject, 3)), 5)
            broker = proxy.target
            proxy.target = ("127.0.0.1", free_port())  # nothing listens there
            proxy.reset()
            while nc.is_connected:
                await asyncio.sleep(0.01)
            for _ in range(3):  # the relay's retries, each refused at once
                with pytest.raises(ConnectionReconnectingError):
                    await publisher.send(messages(subject, 40))
            proxy.target = broker
            while not nc.is_connected:
                await asyncio.sleep(0.05)
            await nc.flush()
            stream = subject.split(".", maxsplit=1)[0]
            assert (await nc.jetstream().stream_info(stream)).state.messages == 3

        on_a_stream(nats_url, body, via=via)
