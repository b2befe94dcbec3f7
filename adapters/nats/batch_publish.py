"""One batch of JetStream publishes, its PubAcks awaited together.

nats-py's `publish_async` spends a future, a semaphore slot, a done-callback and a
JSON decode on every message — about as much Python as the relay's whole mapping.
A relay only ever needs to know that *every* message of its batch was stored, so
this publishes each with the core client, its reply subject naming the batch and
the message (`<inbox>.<batch token>.<index>`), and counts the PubAcks on one
subscription to the client's own inbox (the only one its broker user may read).

A PubAck that carries an error (`PubAckError`), or a "no responders" status (no
stream holds the subject: nats-py's `NoStreamResponseError`), fails the batch: the
caller republishes it from its position, and the stream's `Nats-Msg-Id` window keeps
what was stored already from being stored again.
Acks of an earlier batch, abandoned at its timeout, are recognised and dropped; so
is any reply that is not a PubAck of the stream that must store that message (a
reply the broker sent on someone else's request, aimed here), which can therefore
never pass for one: only the timeout, and a republish, follow.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Sequence

import attrs
import msgspec
from nats.aio.client import NO_RESPONDERS_STATUS, Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.errors import Error as NatsError
from nats.js.api import Header
from nats.js.errors import NoStreamResponseError


@attrs.frozen
class Outgoing:
    """A message as it goes out: built before the publish, off the event loop."""

    subject: str
    payload: bytes
    headers: dict[str, str]
    stream: str  # the stream that must store it: a PubAck naming another is not its


class PubAckError(NatsError):
    """The stream refused a message of the batch."""


class _PubAckProblem(msgspec.Struct):
    description: str = ""
    err_code: int = 0


class _PubAck(msgspec.Struct):
    stream: str = ""
    error: _PubAckProblem | None = None


_decode = msgspec.json.Decoder(_PubAck).decode


@attrs.define
class _Batch:
    token: str  # unguessable: a reply naming it is a reply to this batch
    streams: list[str]  # for each message, the stream that must store it; "" once
    left: int
    done: asyncio.Future[None]


class BatchPublisher:
    def __init__(self, nc: Client) -> None:
        self._nc = nc
        self._prefix = ""
        self._subscription: Subscription | None = None
        self._current: _Batch | None = None

    async def send(self, messages: Sequence[Outgoing]) -> asyncio.Future[None]:
        """Publish every message; the future is done when all are stored.
        A newer batch abandons this one: its acks no longer count."""
        if self._subscription is None:
            self._prefix = self._nc.new_inbox()
            self._subscription = await self._nc.subscribe(
                f"{self._prefix}.*.*", cb=self._on_reply
            )
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        batch = _Batch(
            secrets.token_hex(8), [m.stream for m in messages], len(messages), done
        )
        self._current = batch
        if not messages:
            done.set_result(None)
        reply = f"{self._prefix}.{batch.token}."
        publish = self._nc.publish
        try:
            for index, message in enumerate(messages):
                await publish(
                    message.subject,
                    message.payload,
                    reply=f"{reply}{index}",
                    headers=message.headers,
                )
        except BaseException:
            done.cancel()  # nobody will await it: its acks must not count
            raise
        return done

    async def close(self) -> None:
        if self._subscription is not None:
            await self._subscription.unsubscribe()
            self._subscription = None

    async def _on_reply(self, msg: Msg) -> None:
        batch = self._current
        _, token, index = msg.subject.rsplit(".", 2)
        if batch is None or batch.done.done() or token != batch.token:
            return  # an abandoned batch's, or one already settled
        position = int(index) if index.isascii() and index.isdigit() else -1
        if not 0 <= position < len(batch.streams) or not batch.streams[position]:
            return
        if msg.headers and msg.headers.get(Header.STATUS) == NO_RESPONDERS_STATUS:
            batch.done.set_exception(NoStreamResponseError())  # no stream has it
            return
        try:
            ack = _decode(msg.data)
        except msgspec.DecodeError:
            return  # not the server's: a real PubAck or its absence decides
        if ack.error is not None:
            problem = f"{ack.error.description} ({ack.error.err_code})"
            batch.done.set_exception(PubAckError(f"the stream refused it: {problem}"))
            return
        if ack.stream != batch.streams[position]:
            return  # a PubAck of another stream is not this message's
        batch.streams[position] = ""
        batch.left -= 1
        if batch.left == 0:
            batch.done.set_result(None)
