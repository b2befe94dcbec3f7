"""The consumer runner: fetch a batch, apply it in one SQL transaction, then ack.

Per batch one transaction writes the inbox rows `(consumer, event_id, meaning
digest)`, the effect of every event seen for the first time, and the stream position.
Only after that commit are the messages acked, so a crash before it redelivers them
and a crash after it finds them in the inbox.

Nothing a message contains can stop the runner:
- a body that cannot be read (whatever the decoder raises) is copied to `CLUB_DLQ`
  with its reason before it is terminated, so nothing is dropped silently;
- a batch that fails for a reason other than the connection is applied again one
  event per SAVEPOINT: the healthy ones commit and are acked; each event that fails
  alone (a poison event) is NAKed with a growing delay (`POISON_RETRY`: 1 s doubling
  per poison failure up to 60 s, no jitter; the failure counted, and its first
  failure's time written, in the same transaction, adapters/postgres/
  first_failures.py) and, once it has failed so `poison_attempts` times,
  dead-lettered with its reason, its owner (CLUB_DLQ_OWNERS, by the event's type)
  and that time;
- a failure of the connection (TRANSIENT) NAKs the batch and is waited out; those
  redeliveries are no poison failures, so an outage never brings an event closer
  to the DLQ.

Reading, the poison bound, first failures and dead-lettering are the job worker's
too (adapters/nats/delivery.py); the batch, the inbox transaction and the position
are this runner's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Sequence
from uuid import UUID

import attrs
import sqlalchemy as sa
import structlog
from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext
from structlog.contextvars import bound_contextvars

from adapters.crash import crash_point
from adapters.metrics import (
    CONTRACT_CONFLICTS,
    DUPLICATES_SKIPPED,
    EVENTS_APPLIED,
    POISON_EVENTS,
    count_retries,
    observe_wait,
)
from adapters.nats.dead_letters import Owner, Unreadable
from adapters.nats.delivery import DeliveryRuntime, decode
from adapters.nats.dlq import ensure_replay_consumer, replay_durable
from adapters.nats.frames import ack_all
from adapters.nats.pull import bind_pull
from adapters.nats.streams import (
    ACK_WAIT_S,
    EVENTS_STREAM,
    POISON_ATTEMPTS,
    REPLAY_STREAM,
    ensure_consumer,
)
from adapters.postgres.first_failures import FirstFailures
from adapters.postgres.inbox import (
    Applied,
    Apply,
    Delivery,
    advance,
    apply_batch,
    apply_isolated,
)
from adapters.reasons import describe
from adapters.transient import TRANSIENT, Backoff
from application.backoff import BackoffPolicy, Jitter
from application.contracts.envelope import MalformedEnvelopeError
from application.contracts.mapping import UnknownSchemaError
from application.contracts.meaning import meaning_digest
from application.dlq_owners import DlqOwners

log = structlog.get_logger()

NAK_DELAY_S = 2.0
ORDER_NOTE = (
    "later events of the aggregate were applied meanwhile; they need not wait: "
    "read models merge each aggregate by aggregate_version, so a replay of this "
    "one never overwrites a later state"
)
# A poison event's redeliveries keep a fixed schedule (no jitter): 1 s after its
# first failure, doubled per poison failure, up to 60 s.
POISON_RETRY = BackoffPolicy(first=1.0, cap=60.0, jitter=Jitter.NONE)

__all__ = ["BatchOutcome", "ConsumerRunner", "Incoming", "Unreadable"]


@attrs.frozen
class Incoming:
    msg: Msg
    delivery: Delivery


@attrs.define
class BatchOutcome:
    applied: int = 0
    duplicates: int = 0
    dead: list[Unreadable] = attrs.Factory(list)
    retrying: list[Incoming] = attrs.Factory(list)  # poison, NAKed for a retry
    # stream sequence -> how many times it has failed as poison, of the retrying
    poison_failures: dict[int, int] = attrs.Factory(dict)

    def unsettled(self) -> set[int]:
        """`id()` of each message not settled yet: dead-lettered or retrying."""
        dead = {id(item.msg) for item in self.dead}
        return dead | {id(item.msg) for item in self.retrying}


class ConsumerRunner:
    def __init__(
        self,
        *,
        name: str,
        apply: Apply,
        js: JetStreamContext,
        engine: sa.Engine,
        owner: Owner | None = None,
        batch_size: int = 256,
        fetch_timeout: float = 1.0,
        ack_wait: float = ACK_WAIT_S,
        poison_attempts: int = POISON_ATTEMPTS,
        poison_retry: BackoffPolicy = POISON_RETRY,
    ) -> None:
        self.name = name
        self._apply = apply
        self._js = js
        self._engine = engine
        self._batch_size = batch_size
        self._fetch_timeout = fetch_timeout
        self._ack_wait = ack_wait
        # Unreadable, poison, given up: the same bookkeeping as a job worker's.
        self._delivery = DeliveryRuntime(
            name=name,
            js=js,
            # None: no rules, every dead letter names the default owner.
            owner=owner or DlqOwners().for_consumer(name),
            failures=FirstFailures(engine),
            role="consumer",
            order=ORDER_NOTE,
            poison_attempts=poison_attempts,
            poison_retry=poison_retry,
        )
        # Events that failed alone before: a batch holding one goes straight to
        # the isolated path instead of failing whole once more.
        self._suspects: set[UUID] = set()

    async def run(self, stop: asyncio.Event) -> None:
        """The live events, and beside them what a DLQ replay hands back."""
        await ensure_consumer(self._js, self.name, ack_wait=self._ack_wait)
        await ensure_replay_consumer(self._js, self.name, ack_wait=self._ack_wait)
        live = await bind_pull(self._js, durable=self.name, stream=EVENTS_STREAM)
        replays = await bind_pull(
            self._js, durable=replay_durable(self.name), stream=REPLAY_STREAM
        )
        await asyncio.gather(
            self._loop(live, stop), self._loop(replays, stop, replayed=True)
        )

    async def _loop(
        self,
        sub: JetStreamContext.PullSubscription,
        stop: asyncio.Event,
        *,
        replayed: bool = False,
    ) -> None:
        backoff = Backoff()
        while not stop.is_set():
            try:
                await self.poll(sub, replayed=replayed)
            except TRANSIENT as e:  # unacked messages come back after ack_wait
                log.warning("consumer.retry", consumer=self.name, error=repr(e))
                await backoff.wait()
            else:
                backoff.reset()

    async def poll(
        self, sub: JetStreamContext.PullSubscription, *, replayed: bool = False
    ) -> BatchOutcome:
        """Fetch one batch and handle it; an empty wait is an empty outcome."""
        try:
            msgs = await sub.fetch(self._batch_size, timeout=self._fetch_timeout)
        except (NatsTimeoutError, TimeoutError):  # nothing new within the wait
            return BatchOutcome()
        return await self.handle(msgs, replayed=replayed)

    async def handle(self, msgs: list[Msg], *, replayed: bool = False) -> BatchOutcome:
        """`replayed`: messages a DLQ replay handed back (CLUB_REPLAY): applied like
        the live ones, but their sequence numbers are not the stream position.
        Every log line of the batch names the consumer; one about a single event
        names its `event_id` and `correlation_id` too."""
        with bound_contextvars(consumer=self.name):
            return await self._handle(msgs, replayed=replayed)

    async def _handle(self, msgs: list[Msg], *, replayed: bool) -> BatchOutcome:
        crash_point("consumer.after_receive")
        for msg in msgs:
            observe_wait(self.name, msg.metadata.num_delivered, msg.metadata.timestamp)
        read = [_read(msg) for msg in msgs]
        readable = [item for item in read if isinstance(item, Incoming)]
        unreadable = [item for item in read if isinstance(item, Unreadable)]
        dead_seqs = [] if replayed else [item.stream_seq for item in unreadable]
        try:
            outcome = await asyncio.to_thread(
                self._commit, readable, dead_seqs, moves_position=not replayed
            )
        except TRANSIENT as e:
            log.warning("consumer.batch_failed", consumer=self.name, error=repr(e))
            count_retries(self.name, "transient", len(msgs))
            for msg in msgs:
                with contextlib.suppress(*TRANSIENT):  # else redelivered after ack_wait
                    await msg.nak(delay=NAK_DELAY_S)
            raise
        crash_point("consumer.after_commit")
        EVENTS_APPLIED.labels(consumer=self.name).inc(outcome.applied)
        DUPLICATES_SKIPPED.labels(consumer=self.name).inc(outcome.duplicates)
        count_retries(self.name, "unknown", len(outcome.retrying))  # poison, NAKed
        outcome.dead.extend(unreadable)
        unsettled = outcome.unsettled()
        if outcome.dead:  # a lost publish is raised: the rest is redelivered
            await self._delivery.give_up(outcome.dead, name_events=True)
        for retry in outcome.retrying:
            failures = outcome.poison_failures[retry.delivery.stream_seq]
            await retry.msg.nak(delay=self._delivery.retry_delay(failures))
        await self._acknowledge([msg for msg in msgs if id(msg) not in unsettled])
        return outcome

    async def _acknowledge(self, msgs: list[Msg]) -> None:
        await ack_all(msgs)

    def _commit(
        self, batch: list[Incoming], dead_seqs: list[int], *, moves_position: bool
    ) -> BatchOutcome:
        """Inbox rows, effects and position in one transaction; isolate on poison."""
        deliveries = [item.delivery for item in batch]
        seqs = [d.stream_seq for d in deliveries] if moves_position else []
        if not self._suspects.intersection(d.envelope.event_id for d in deliveries):
            last_seq = max([*dead_seqs, *seqs], default=0)
            try:
                with self._engine.begin() as conn:
                    result = apply_batch(
                        conn, self.name, deliveries, self._apply, last_seq
                    )
                    outcome = self._outcome(batch, result)
                    self._settled(batch, outcome, conn)
                return outcome
            except TRANSIENT:
                raise
            except Exception as e:  # some event in it is poison: find which
                log.warning(
                    "consumer.batch_isolating", consumer=self.name, error=describe(e)
                )
        with self._engine.begin() as conn:
            result = apply_isolated(conn, self.name, deliveries, self._apply)
            # Counted in the transaction whose failure it counts.
            poisoned = [batch[index].msg for index, _ in result.poisoned]
            failures = self._delivery.poison_failures(poisoned, within=conn)
            outcome = self._outcome(batch, result, failures)
            retrying = {id(item.delivery) for item in outcome.retrying}
            settled = [
                d.stream_seq
                for d in deliveries
                if id(d) not in retrying and moves_position
            ]
            # Settled messages only: the position never claims a pending retry.
            if last := max([*dead_seqs, *settled], default=0):
                advance(conn, self.name, last)
            self._settled(batch, outcome, conn)
        return outcome

    def _settled(
        self, batch: list[Incoming], outcome: BatchOutcome, conn: sa.Connection
    ) -> None:
        """A failure recorded for a message this commit settles (applied or a
        duplicate) goes with it; a dead one's is read for its dead letter first."""
        unsettled = outcome.unsettled()
        done = [item.msg for item in batch if id(item.msg) not in unsettled]
        self._delivery.settled(done, within=conn)

    def _outcome(
        self, batch: list[Incoming], result: Applied, failures: Sequence[int] = ()
    ) -> BatchOutcome:
        """`failures`: of each poisoned delivery in turn, its poison failures."""
        outcome = BatchOutcome(
            applied=result.applied,
            duplicates=result.duplicates,
            dead=[self._conflict(batch[index]) for index in result.conflicts],
        )
        for (index, error), failed in zip(result.poisoned, failures, strict=True):
            item = batch[index]
            dead = self._delivery.poisoned(item.msg, error, failed)
            self._poisoned(item, error, failed, given_up=dead is not None)
            if dead is not None:
                outcome.dead.append(dead)
            else:
                outcome.retrying.append(item)
                outcome.poison_failures[item.delivery.stream_seq] = failed
        return outcome

    def _poisoned(
        self, item: Incoming, error: Exception, failures: int, *, given_up: bool
    ) -> None:
        """The alert: a metric to page on and an error line saying which event."""
        event_id = item.delivery.envelope.event_id
        POISON_EVENTS.labels(consumer=self.name).inc()
        log.error(
            "consumer.poison_event",
            consumer=self.name,
            event_id=str(event_id),
            correlation_id=str(item.delivery.envelope.aggregate_id),
            stream_seq=item.delivery.stream_seq,
            delivery=item.msg.metadata.num_delivered,
            failure=failures,
            of=self._delivery.poison_attempts,
            dead_lettered=given_up,
            error=describe(error),
        )
        if given_up:
            self._suspects.discard(event_id)
        else:
            self._suspects.add(event_id)

    def _conflict(self, item: Incoming) -> Unreadable:
        """Same event_id, other meaning: a broken contract, never a silent skip."""
        event_id, seq = item.delivery.envelope.event_id, item.delivery.stream_seq
        CONTRACT_CONFLICTS.labels(consumer=self.name).inc()
        log.error(
            "consumer.contract_conflict",
            consumer=self.name,
            event_id=str(event_id),
            correlation_id=str(item.delivery.envelope.aggregate_id),
            stream_seq=seq,
        )
        reason = f"contract-conflict: event {event_id} seen with another meaning"
        return Unreadable(item.msg, seq, reason)


def _read(msg: Msg) -> Incoming | Unreadable:
    """Decode a message; what cannot be read is dead-lettered, whatever was raised."""
    envelope = decode(msg)
    if isinstance(envelope, Unreadable):
        return envelope
    seq = msg.metadata.sequence.stream
    try:
        digest = meaning_digest(envelope)  # decodes it: an unreadable one fails here
    except UnknownSchemaError as e:
        return Unreadable(msg, seq, f"unknown-schema: {e}")
    except MalformedEnvelopeError as e:
        return Unreadable(msg, seq, f"malformed: {e}")
    except Exception as e:  # a message's content never ends the consumer
        return Unreadable(msg, seq, f"malformed: {describe(e)}")
    body_digest = hashlib.sha256(msg.data).digest()
    return Incoming(msg, Delivery(envelope, digest, seq, body_digest))
