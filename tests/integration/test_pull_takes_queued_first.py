"""A pull subscription bound by `bind_pull` fetches what the library's would, in the
same order, with the same pending count and the same timeout, and without a task
for each message already received."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any
from uuid import uuid4

import pytest
from nats.aio.client import Client
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, StreamConfig

from adapters.nats.frames import ack_all
from adapters.nats.pull import bind_pull
from tests.integration.helpers import with_js

MESSAGES = 300


async def stream_of(js: JetStreamContext, count: int) -> str:
    """A fresh stream holding `count` messages (their bodies 0, 1, …) and two
    durables on it: one bound the library's way, one by `bind_pull`."""
    name = f"PULL_{uuid4().hex[:8]}"
    await js.add_stream(StreamConfig(name=name, subjects=[f"{name}.>"]))
    for index in range(count):
        await js.publish(f"{name}.x", str(index).encode())
    for durable in ("library", "ours"):
        config = ConsumerConfig(
            durable_name=durable, ack_policy=AckPolicy.EXPLICIT, ack_wait=30
        )
        await js.add_consumer(name, config)
    return name


async def bodies(sub: JetStreamContext.PullSubscription, batch: int) -> list[bytes]:
    """Every message of the stream, fetched `batch` at a time and acked."""
    seen: list[bytes] = []
    while len(seen) < MESSAGES:
        msgs = await sub.fetch(batch, timeout=5)
        seen.extend(msg.data for msg in msgs)
        await ack_all(msgs)
    return seen


@pytest.mark.parametrize("batch", [1, 7, 256])
def test_the_same_messages_in_the_same_order_as_the_library(
    nats_url: str, batch: int
) -> None:
    async def body(js: JetStreamContext, _: Client) -> None:
        stream = await stream_of(js, MESSAGES)
        library = await js.pull_subscribe_bind(durable="library", stream=stream)
        ours = await bind_pull(js, durable="ours", stream=stream)
        expected = [str(index).encode() for index in range(MESSAGES)]
        assert await bodies(library, batch) == expected
        assert await bodies(ours, batch) == expected
        # The bytes it counts as pending go back to nothing, as the library's do:
        # a count left over would make the client drop messages as a slow consumer.
        assert ours.pending_bytes == library.pending_bytes == 0
        assert ours.pending_msgs == library.pending_msgs == 0
        await js.delete_stream(stream)

    asyncio.run(with_js(nats_url, body))


def test_an_empty_stream_times_out_as_the_library_does(nats_url: str) -> None:
    async def body(js: JetStreamContext, _: Client) -> None:
        stream = await stream_of(js, 0)
        ours = await bind_pull(js, durable="ours", stream=stream)
        with pytest.raises(NatsTimeoutError):
            await ours.fetch(10, timeout=0.3)
        await js.delete_stream(stream)

    asyncio.run(with_js(nats_url, body))


class TaskCount:
    """A task factory that counts the tasks the loop starts."""

    def __init__(self) -> None:
        self.started = 0

    def __call__(
        self, loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any]
    ) -> asyncio.Task[Any]:
        self.started += 1
        return asyncio.Task(coro, loop=loop)


def test_messages_already_received_take_no_task_each(nats_url: str) -> None:
    """The library starts two tasks a message; a batch bound here starts a few in
    all (the pull request's wait for the first message, and no more)."""

    async def fetch_counting(js: JetStreamContext, bound_by_us: bool) -> int:
        stream = await stream_of(js, MESSAGES)
        if bound_by_us:
            sub = await bind_pull(js, durable="ours", stream=stream)
        else:
            sub = await js.pull_subscribe_bind(durable="library", stream=stream)
        await sub.fetch(1, timeout=5)  # the connection's own tasks are running
        count = TaskCount()
        asyncio.get_running_loop().set_task_factory(count)
        try:
            fetched = await sub.fetch(MESSAGES - 1, timeout=5)
        finally:
            asyncio.get_running_loop().set_task_factory(None)
        assert len(fetched) == MESSAGES - 1
        await js.delete_stream(stream)
        return count.started

    async def body(js: JetStreamContext, _: Client) -> tuple[int, int]:
        return await fetch_counting(js, False), await fetch_counting(js, True)

    library, ours = asyncio.run(with_js(nats_url, body))
    assert library >= MESSAGES  # what the change is about, still so in nats-py
    assert ours < MESSAGES // 10
