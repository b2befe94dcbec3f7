"""One batch of JetStream publishes, known stored all together.

nats-py's `publish_async` spends a future, a semaphore slot, a done-callback and a
JSON decode on every message — about as much Python as the relay's whole mapping.
A relay only ever needs to know that *every* message of its batch was stored, so
this publishes each with the core client and learns it from replies to its own
inbox (the only one its broker user may read), on one subscription, two ways:

- **Fast ingest** (NATS 2.14+, a stream with `allow_batched`): a batch of
  `FAST_INGEST_MIN` or more messages for one stream goes out as a fast-ingest batch —
  the reply subject `<inbox>.<batch>.<flow>.fail.<seq>.<op>.$FI` carries the batch
  and each message's place in it, and the server answers once at the start and
  once at the commit (`{"batch": …, "count": N}`: all N stored, or deduplicated by
  `Nats-Msg-Id`, with no gap — a gap abandons the batch). A stream without the
  setting refuses the batch whole (10205): it is sent again the per-message way, and
  so is every later batch for that stream. A broker older than 2.14 stores each
  message and answers each with a plain PubAck, which is counted as below.
- **One PubAck a message** (`<inbox>.<batch>.<index>`): small batches, batches for
  several streams (dead letters beside events), and streams without fast ingest.

An error, a "no responders" status (no stream holds the subject: nats-py's
`NoStreamResponseError`) or a batch the server abandons fails the batch: the caller
republishes it from its position, and the stream's `Nats-Msg-Id` window keeps what was
stored already from being stored again; the batch after a fast one that did not
complete (failed, or abandoned at its timeout) goes the per-message way, so a retry
never depends on the path that failed. While the client reconnects the batch fails
at once: nothing is written. Replies of an earlier batch, abandoned at its timeout,
are recognised and dropped; so is any reply that is not the server's answer for the
stream that must store that message (a reply the broker sent on someone else's
request, aimed here), which can therefore never pass for one: only the timeout, and
a republish, follow.

Each message goes out as the protocol's own `HPUB` frame, its header block built
and checked with the message (in the relay's prefetch thread), the batch written
with one flush (adapters/nats/frames.py: `nc.publish` costs five times the Python
of the frame itself).
"""

from __future__ import annotations

import asyncio
import re
import secrets
from collections.abc import Sequence

import attrs
import msgspec
from nats.aio.client import NO_RESPONDERS_STATUS, Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.errors import Error as NatsError
from nats.errors import MaxPayloadError
from nats.js.api import Header
from nats.js.errors import NoStreamResponseError

from adapters.nats.frames import SUBJECT, check_writable, write

# Below this a batch takes one PubAck a message: the latency path (a few events a
# batch) stays the simplest, and fast ingest's per-batch state pays off on backlogs.
FAST_INGEST_MIN = 32
FAST_INGEST_DISABLED = 10205  # the stream has no allow_batched
_MAX_FLOW = 65535  # the reply subject's flow is a uint16
_FAST_SUFFIX = "$FI"
_OP_START, _OP_ADD, _OP_COMMIT = 0, 1, 2
# After the inbox: `<batch>.<index>`, or `<batch>.<flow>.<gap>.<seq>.<op>.$FI`.
_PUBACK_TOKENS, _FAST_TOKENS = 2, 6
_HEADER_KEY = re.compile(r"[!-9;-~]+")  # printable ASCII but the colon


@attrs.frozen
class Outgoing:
    """A message as it goes out: built before the publish, off the event loop."""

    subject: str
    payload: bytes
    headers: dict[str, str]
    stream: str  # the stream that must store it: a reply naming another is not its
    head: bytes = attrs.field(init=False)  # the HPUB frame's header block

    @head.default
    def _header_block(self) -> bytes:
        # A line break would let a value end the frame and start a command.
        if (
            not SUBJECT.fullmatch(self.subject)
            or not all(map(_HEADER_KEY.fullmatch, self.headers))
            or any("\r" in v or "\n" in v for v in self.headers.values())
        ):
            msg = f"a malformed subject or header in a message for {self.subject!r}"
            raise ValueError(msg)
        lines = "".join(f"{key}: {value}\r\n" for key, value in self.headers.items())
        return f"NATS/1.0\r\n{lines}\r\n".encode()

    @property
    def size(self) -> int:
        """Bytes the broker counts against its max_payload: headers and body."""
        return len(self.head) + len(self.payload)


class MessageTooLargeError(MaxPayloadError):
    """A message with its headers over what the broker takes. Not the message's
    fault but the broker's setting (Club's events are bounded; NATS's default
    max_payload, 1 MB, holds any of them): the caller waits and retries, as for an
    outage, and says what to change."""

    def __init__(self, message: Outgoing, most: int) -> None:
        named = message.headers.get("Nats-Msg-Id", "none")
        super().__init__(
            f"a message for {message.subject} (Nats-Msg-Id {named}) is "
            f"{message.size} bytes "
            f"with its headers and the broker takes at most {most}: raise "
            "max_payload in the NATS server's configuration"
        )

    def __str__(self) -> str:  # MaxPayloadError's own says only "exceeded"
        return str(self.args[0])


class PubAckError(NatsError):
    """The stream refused a message of the batch, or abandoned the batch."""


class _Problem(msgspec.Struct):
    description: str = ""
    err_code: int = 0


class _Reply(msgspec.Struct):
    """A PubAck, a fast-ingest flow ack (`type`), or a fast batch's commit ack."""

    type: str = ""
    stream: str = ""
    batch: str = ""
    count: int = 0
    error: _Problem | None = None


_decode = msgspec.json.Decoder(_Reply).decode


@attrs.define
class _Batch:
    token: str  # unguessable: a reply naming it is a reply to this batch
    messages: Sequence[Outgoing]
    done: asyncio.Future[None]
    fast: bool
    # For each message, the stream that must store it; "" once its PubAck came.
    streams: list[str] = attrs.Factory(list)
    left: int = 0
    resent: bool = False  # refused as a fast batch: sent again, PubAck-wise

    def __attrs_post_init__(self) -> None:
        self.streams = [m.stream for m in self.messages]
        self.left = len(self.messages)

    def fail(self, error: Exception) -> None:
        if not self.done.done():
            self.done.set_exception(error)


class BatchPublisher:
    def __init__(self, nc: Client) -> None:
        self._nc = nc
        self._prefix = ""
        self._subscription: Subscription | None = None
        self._current: _Batch | None = None
        # Streams that refused a fast batch (or a broker that stored one as plain
        # publishes): their batches go the per-message way from then on.
        self._per_message: set[str] = set()
        self._fallback: asyncio.Task[None] | None = None

    async def send(self, messages: Sequence[Outgoing]) -> asyncio.Future[None]:
        """Publish every message; the future is done when all are stored.
        A newer batch abandons this one: its replies no longer count."""
        if self._subscription is None:
            self._prefix = self._nc.new_inbox()
            self._subscription = await self._nc.subscribe(
                f"{self._prefix}.>", cb=self._on_reply
            )
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        streams = {m.stream for m in messages}
        fast = (
            len(messages) >= FAST_INGEST_MIN
            and len(streams) == 1
            and not streams & self._per_message
            and not _fast_unfinished(self._current)
        )
        batch = _Batch(secrets.token_hex(8), messages, done, fast)
        if not messages:
            done.set_result(None)
        try:
            await self._publish(batch)
        except BaseException:
            done.cancel()  # nobody will await it: its replies must not count
            raise
        return done

    async def _publish(self, batch: _Batch) -> None:
        self._current = batch
        nc = self._nc
        check_writable(nc)
        most = nc.max_payload
        for m in batch.messages:
            if m.size > most:
                raise MessageTooLargeError(m, most)
        if batch.fast:
            last = len(batch.messages)
            head = f"{self._prefix}.{batch.token}.{min(last, _MAX_FLOW)}.fail."
            replies = [
                f"{head}{seq}.{_op(seq, last)}.{_FAST_SUFFIX}"
                for seq in range(1, last + 1)
            ]
        else:
            head = f"{self._prefix}.{batch.token}."
            replies = [f"{head}{index}" for index in range(len(batch.messages))]
        frames = zip(batch.messages, replies, strict=True)
        await write(nc, (_frame(message, reply) for message, reply in frames))

    async def close(self) -> None:
        if self._fallback is not None:
            self._fallback.cancel()
        if self._subscription is not None:
            await self._subscription.unsubscribe()
            self._subscription = None

    async def _on_reply(self, msg: Msg) -> None:
        batch = self._current
        tokens = msg.subject[len(self._prefix) + 1 :].split(".")
        if batch is None or batch.done.done() or tokens[0] != batch.token:
            return  # an abandoned batch's, or one already settled
        if batch.resent:
            return  # the refusals of its other messages
        if msg.headers and msg.headers.get(Header.STATUS) == NO_RESPONDERS_STATUS:
            batch.fail(NoStreamResponseError())  # no stream has it
            return
        try:
            reply = _decode(msg.data)
        except msgspec.DecodeError:
            return  # not the server's: a real reply or its absence decides
        if batch.fast and len(tokens) == _FAST_TOKENS and tokens[5] == _FAST_SUFFIX:
            self._on_fast_reply(batch, reply, tokens[3])
        elif not batch.fast and len(tokens) == _PUBACK_TOKENS:
            self._on_puback(batch, reply, _index(tokens[1]))

    def _on_puback(self, batch: _Batch, ack: _Reply, position: int) -> None:
        if not 0 <= position < len(batch.streams) or not batch.streams[position]:
            return
        if ack.error is not None:
            batch.fail(PubAckError(f"the stream refused it: {_problem(ack.error)}"))
            return
        if ack.stream != batch.streams[position] or ack.type or ack.batch:
            return  # a reply for another stream, or of another kind, is not its
        batch.streams[position] = ""
        batch.left -= 1
        if batch.left == 0:
            batch.done.set_result(None)

    def _on_fast_reply(self, batch: _Batch, reply: _Reply, seq: str) -> None:
        if reply.error is not None:
            if reply.error.err_code == FAST_INGEST_DISABLED:
                # Nothing of it was stored: send it PubAck-wise.
                self._per_message.add(batch.messages[0].stream)
                batch.resent = True
                self._fallback = asyncio.ensure_future(self._send_again(batch))
                return
            batch.fail(PubAckError(f"the stream refused it: {_problem(reply.error)}"))
        elif reply.type == "ack":
            return  # flow control: the commit's answer is the one that counts
        elif reply.type:  # a gap, or one message refused: the batch is abandoned
            batch.fail(PubAckError(f"the stream abandoned the batch ({reply.type})"))
        elif reply.batch:
            if reply.stream != batch.streams[0] or reply.batch != batch.token:
                return  # not this batch's commit
            if reply.count != len(batch.messages):
                stored = f"{reply.count} of {len(batch.messages)}"
                batch.fail(PubAckError(f"the batch ended after {stored} messages"))
                return
            batch.done.set_result(None)
        else:  # a broker without fast ingest stored it as a plain publish
            self._per_message.add(batch.messages[0].stream)
            self._on_puback(batch, reply, _index(seq) - 1)

    async def _send_again(self, batch: _Batch) -> None:
        """The same messages, same future, one PubAck each (a stream without
        fast ingest stored none of the refused batch)."""
        if self._current is not batch or batch.done.done():
            return  # abandoned meanwhile
        again = _Batch(secrets.token_hex(8), batch.messages, batch.done, fast=False)
        try:
            await self._publish(again)
        except Exception as e:  # the awaited future carries it to the relay
            batch.fail(e)


def _fast_unfinished(batch: _Batch | None) -> bool:
    """A fast batch that failed, or was abandoned (cancelled at its timeout)."""
    if batch is None or not batch.fast:
        return False
    done = batch.done
    return not done.done() or done.cancelled() or done.exception() is not None


def _op(seq: int, last: int) -> int:
    return _OP_START if seq == 1 else _OP_COMMIT if seq == last else _OP_ADD


def _frame(message: Outgoing, reply: str) -> bytes:
    head, payload = message.head, message.payload
    return b"HPUB %s %s %d %d\r\n%s%s\r\n" % (
        message.subject.encode(),
        reply.encode(),
        len(head),
        len(head) + len(payload),
        head,
        payload,
    )


def _index(token: str) -> int:
    return int(token) if token.isascii() and token.isdigit() else -1


def _problem(problem: _Problem) -> str:
    return f"{problem.description} ({problem.err_code})"
