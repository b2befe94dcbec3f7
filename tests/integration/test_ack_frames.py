"""A consumer's acks written as one batch of frames: each message acked once, a
reply subject that could smuggle a command refused before anything is written."""

from __future__ import annotations

import asyncio
from uuid import uuid4

import pytest
from nats.aio.client import Client
from nats.errors import MsgAlreadyAckdError, NotJSMessageError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, StreamConfig

from adapters.nats.frames import ack_all
from tests.integration.helpers import with_js


async def fetched(js: JetStreamContext, count: int) -> tuple[str, list]:
    """`count` messages fetched from a fresh stream's durable, none acked yet."""
    name = f"ACKS_{uuid4().hex[:8]}"
    await js.add_stream(StreamConfig(name=name, subjects=[f"{name}.>"]))
    for index in range(count):
        await js.publish(f"{name}.x", str(index).encode())
    config = ConsumerConfig(
        durable_name="d", ack_policy=AckPolicy.EXPLICIT, ack_wait=30
    )
    await js.add_consumer(name, config)
    sub = await js.pull_subscribe_bind(durable="d", stream=name)
    return name, await sub.fetch(count, timeout=5)


async def unacked(js: JetStreamContext, nc: Client, stream: str) -> int:
    await nc.flush()
    return (await js.consumer_info(stream, "d")).num_ack_pending


async def settled_unacked(js: JetStreamContext, nc: Client, stream: str) -> int:
    """The count once the server has applied the acks: it takes them from its own
    queue, so a consumer info asked right after may still count some (5 s at most)."""
    deadline = asyncio.get_running_loop().time() + 5
    while (count := await unacked(js, nc, stream)) and (
        asyncio.get_running_loop().time() < deadline
    ):
        await asyncio.sleep(0.02)
    return count


def test_every_message_of_a_batch_is_acked_once(nats_url: str) -> None:
    async def body(js: JetStreamContext, nc: Client) -> None:
        stream, msgs = await fetched(js, 50)
        assert await unacked(js, nc, stream) == 50
        await ack_all(msgs)
        assert await settled_unacked(js, nc, stream) == 0
        with pytest.raises(MsgAlreadyAckdError):
            await ack_all(msgs[:1])
        await ack_all([])  # nothing to write
        await js.delete_stream(stream)

    asyncio.run(with_js(nats_url, body))


@pytest.mark.parametrize(
    ("reply", "refusal"),
    [
        ("$JS.ACK.x\r\nPUB forged 0", ValueError),
        ("$JS.ACK.x y", ValueError),
        ("$JS.ACK.é", ValueError),
        ("", NotJSMessageError),
    ],
)
def test_a_reply_that_is_not_one_token_is_refused_before_any_ack(
    nats_url: str, reply: str, refusal: type[Exception]
) -> None:
    async def body(js: JetStreamContext, nc: Client) -> None:
        stream, msgs = await fetched(js, 3)
        msgs[1].reply = reply  # what only someone else publishing here could do
        with pytest.raises(refusal):
            await ack_all(msgs)
        # The server answers an acked-and-confirmed message after every ack sent
        # before it on this connection: had the first been written, 1 would be left.
        await msgs[2].ack_sync()
        assert await unacked(js, nc, stream) == 2  # not even the first
        await js.delete_stream(stream)

    asyncio.run(with_js(nats_url, body))
