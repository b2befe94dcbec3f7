"""One batch of JetStream publishes, its PubAcks awaited together.

nats-py's `publish_async` spends a future, a semaphore slot, a done-callback and a
JSON decode on every message — about as much Python as the relay's whole mapping.
A relay only ever needs to know that *every* message of its batch was stored, so
this publishes each with the core client, its reply subject naming the batch and
the message (`<inbox>.<batch>.<index>`), and counts the PubAcks on one subscription
to the client's own inbox (the only one its broker user may read).

A PubAck that carries an error (`PubAckError`), or a "no responders" status (no
stream holds the subject: nats-py's `NoStreamResponseError`), fails the batch: the
caller republishes it from its position, and the stream's `Nats-Msg-Id` window keeps
what was stored already from being stored again.
Acks of an earlier batch, abandoned at its timeout, are recognised and dropped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import attrs
import msgspec
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.errors import Error as NatsError
from nats.js.errors import NoStreamResponseError

NO_RESPONDERS = "503"


@attrs.frozen
class Outgoing:
    """A message as it goes out: built before the publish, off the event loop."""

    subject: str
    payload: bytes
    headers: dict[str, str]


class PubAckError(NatsError):
    """The stream refused a message of the batch (or no stream answered)."""


class _PubAckProblem(msgspec.Struct):
    description: str = ""
    err_code: int = 0


class _PubAck(msgspec.Struct):
    stream: str = ""
    error: _PubAckProblem | None = None


_decode = msgspec.json.Decoder(_PubAck).decode


@attrs.define
class _Batch:
    number: int
    awaited: bytearray  # 1 where a message's PubAck is still to come
    left: int
    done: asyncio.Future[None]


class BatchPublisher:
    def __init__(self, nc: Client) -> None:
        self._nc = nc
        self._prefix = ""
        self._subscription: Subscription | None = None
        self._count = 0
        self._current: _Batch | None = None

    async def send(self, messages: Sequence[Outgoing]) -> asyncio.Future[None]:
        """Publish every message; the future is done when all are stored.
        A newer batch abandons this one: its acks no longer count."""
        if self._subscription is None:
            self._prefix = self._nc.new_inbox()
            self._subscription = await self._nc.subscribe(
                f"{self._prefix}.*.*", cb=self._on_reply
            )
        self._count += 1
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        batch = _Batch(
            self._count, bytearray(b"\1" * len(messages)), len(messages), done
        )
        self._current = batch
        if not messages:
            done.set_result(None)
        reply = f"{self._prefix}.{batch.number}."
        publish = self._nc.publish
        for index, message in enumerate(messages):
            await publish(
                message.subject,
                message.payload,
                reply=f"{reply}{index}",
                headers=message.headers,
            )
        return done

    async def close(self) -> None:
        if self._subscription is not None:
            await self._subscription.unsubscribe()
            self._subscription = None

    async def _on_reply(self, msg: Msg) -> None:
        batch = self._current
        _, number, index = msg.subject.rsplit(".", 2)
        if batch is None or batch.done.done() or number != str(batch.number):
            return  # an abandoned batch's, or one already failed
        position = int(index)
        if not 0 <= position < len(batch.awaited) or not batch.awaited[position]:
            return
        if msg.headers and msg.headers.get("Status") == NO_RESPONDERS:
            batch.done.set_exception(NoStreamResponseError())  # no stream has it
            return
        problem = _refusal(msg.data)
        if problem is not None:
            batch.done.set_exception(PubAckError(problem))
            return
        batch.awaited[position] = 0
        batch.left -= 1
        if batch.left == 0:
            batch.done.set_result(None)


def _refusal(reply: bytes) -> str | None:
    """Why the message was not stored, or None for a PubAck (a duplicate too)."""
    try:
        ack = _decode(reply)
    except msgspec.DecodeError:
        return f"an unreadable PubAck: {reply[:200]!r}"
    if ack.error is not None:
        return f"the stream refused it: {ack.error.description} ({ack.error.err_code})"
    if not ack.stream:
        return f"a PubAck naming no stream: {reply[:200]!r}"
    return None
