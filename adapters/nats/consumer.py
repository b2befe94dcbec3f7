"""The consumer runner: fetch a batch, apply it in one SQL transaction, then ack.

Per batch one transaction writes the inbox rows `(consumer, event_id, sha256)`, the
effect of every event seen for the first time, and the stream position. Only after
that commit are the messages acked, so a crash before it redelivers them and a crash
after it finds them in the inbox. What cannot be read is copied to `CLUB_DLQ` with its
reason before it is terminated, so nothing is dropped silently.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib

import attrs
import sqlalchemy as sa
import structlog
from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext

from adapters.crash import crash_point
from adapters.metrics import CONTRACT_CONFLICTS, DEAD_LETTERS
from adapters.nats.streams import ACK_WAIT_S, EVENTS_STREAM, ensure_consumer
from adapters.postgres.inbox import Apply, Delivery, apply_batch
from adapters.transient import TRANSIENT, Backoff
from application.contracts.envelope import Envelope, MalformedEnvelopeError
from application.contracts.mapping import UnknownSchemaError, decode

log = structlog.get_logger()

NAK_DELAY_S = 2.0


@attrs.frozen
class Incoming:
    msg: Msg
    delivery: Delivery


@attrs.frozen
class Unreadable:
    msg: Msg
    stream_seq: int
    reason: str


@attrs.define
class BatchOutcome:
    applied: int = 0
    duplicates: int = 0
    dead: list[Unreadable] = attrs.Factory(list)


class ConsumerRunner:
    def __init__(
        self,
        *,
        name: str,
        apply: Apply,
        js: JetStreamContext,
        engine: sa.Engine,
        batch_size: int = 256,
        fetch_timeout: float = 1.0,
        ack_wait: float = ACK_WAIT_S,
    ) -> None:
        self.name = name
        self._apply = apply
        self._js = js
        self._engine = engine
        self._batch_size = batch_size
        self._fetch_timeout = fetch_timeout
        self._ack_wait = ack_wait

    async def run(self, stop: asyncio.Event) -> None:
        await ensure_consumer(self._js, self.name, ack_wait=self._ack_wait)
        sub = await self._js.pull_subscribe_bind(
            durable=self.name, stream=EVENTS_STREAM
        )
        backoff = Backoff()
        while not stop.is_set():
            try:
                await self.poll(sub)
            except TRANSIENT as e:  # unacked messages come back after ack_wait
                log.warning("consumer.retry", consumer=self.name, error=repr(e))
                await backoff.wait()
            else:
                backoff.reset()

    async def poll(self, sub: JetStreamContext.PullSubscription) -> BatchOutcome:
        """Fetch one batch and handle it; an empty wait is an empty outcome."""
        try:
            msgs = await sub.fetch(self._batch_size, timeout=self._fetch_timeout)
        except (NatsTimeoutError, TimeoutError):  # nothing new within the wait
            return BatchOutcome()
        return await self.handle(msgs)

    async def handle(self, msgs: list[Msg]) -> BatchOutcome:
        crash_point("consumer.after_receive")
        read = [_read(msg) for msg in msgs]
        readable = [item for item in read if isinstance(item, Incoming)]
        last_seq = max((_seq(item) for item in read), default=0)
        try:
            outcome = await asyncio.to_thread(self._commit, readable, last_seq)
        except TRANSIENT as e:
            log.warning("consumer.batch_failed", consumer=self.name, error=repr(e))
            for msg in msgs:
                with contextlib.suppress(*TRANSIENT):  # else redelivered after ack_wait
                    await msg.nak(delay=NAK_DELAY_S)
            raise
        crash_point("consumer.after_commit")
        outcome.dead.extend(item for item in read if isinstance(item, Unreadable))
        dead = {id(item.msg) for item in outcome.dead}
        for item in outcome.dead:
            await self._dead_letter(item)
        for msg in msgs:
            if id(msg) not in dead:
                await self._acknowledge(msg)
        return outcome

    async def _acknowledge(self, msg: Msg) -> None:
        await msg.ack()

    def _commit(self, batch: list[Incoming], last_seq: int) -> BatchOutcome:
        """Inbox rows, effects and position in one transaction."""
        with self._engine.begin() as conn:
            result = apply_batch(
                conn,
                self.name,
                [item.delivery for item in batch],
                self._apply,
                last_seq,
            )
        return BatchOutcome(
            applied=result.applied,
            duplicates=result.duplicates,
            dead=[self._conflict(batch[index]) for index in result.conflicts],
        )

    def _conflict(self, item: Incoming) -> Unreadable:
        """Same event_id, other content: a broken contract, never a silent skip."""
        event_id, seq = item.delivery.envelope.event_id, item.delivery.stream_seq
        CONTRACT_CONFLICTS.labels(consumer=self.name).inc()
        log.error(
            "consumer.contract_conflict",
            consumer=self.name,
            event_id=str(event_id),
            stream_seq=seq,
        )
        reason = f"contract-conflict: event {event_id} seen with other content"
        return Unreadable(item.msg, seq, reason)

    async def _dead_letter(self, item: Unreadable) -> None:
        """Copy the payload first: a terminated message's advisory carries none."""
        meta = item.msg.metadata
        headers = dict(item.msg.headers or {})
        digest = hashlib.sha256(item.msg.data).hexdigest()[:32]
        headers.update(
            {
                "Club-Original-Subject": item.msg.subject,
                "Club-Original-Stream-Seq": str(item.stream_seq),
                "Club-Original-Msg-Id": headers.get("Nats-Msg-Id", ""),
                "Club-Delivery-Count": str(meta.num_delivered),
                "Club-Reason": item.reason,
                # The same body dead-lettered twice is one entry, not two.
                "Nats-Msg-Id": f"{self.name}:{digest}",
            }
        )
        await self._js.publish(f"club.dlq.{self.name}", item.msg.data, headers=headers)
        log.error(
            "consumer.dead_lettered",
            consumer=self.name,
            stream_seq=item.stream_seq,
            reason=item.reason,
        )
        DEAD_LETTERS.labels(consumer=self.name, reason=item.reason.split(":")[0]).inc()
        await item.msg.term()


def _read(msg: Msg) -> Incoming | Unreadable:
    seq = msg.metadata.sequence.stream
    try:
        envelope = Envelope.from_json(msg.subject, msg.data)
        decode(envelope)
    except MalformedEnvelopeError as e:
        return Unreadable(msg, seq, f"malformed: {e}")
    except UnknownSchemaError as e:
        return Unreadable(msg, seq, f"unknown-schema: {e}")
    return Incoming(msg, Delivery(envelope, hashlib.sha256(msg.data).digest(), seq))


def _seq(item: Incoming | Unreadable) -> int:
    return item.delivery.stream_seq if isinstance(item, Incoming) else item.stream_seq
