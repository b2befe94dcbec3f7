"""What the consumer runner and the job worker do alike with a message.

Both settle each message JetStream hands them, and both must end what they cannot
finish in the same bounded way, so an operator finds one kind of dead letter:

- a body that cannot be read (`decode`) is given up at once: no retry reads it;
- a message that fails with a bug (poison) is retried with a growing delay until
  it has failed so a bounded number of times (`poison_failures`, `poisoned`,
  `retry_delay`), then given up with its reason. The failures are counted in
  PostgreSQL, not read from JetStream's delivery count, which also holds every
  redelivery of an outage waited out;
- its first failure's time is written when it is first retried (with its count,
  or by `record`, or `failed` in a transaction of its own) and read for its dead
  letter: JetStream keeps no such time, and a NAK cannot add a header
  (adapters/postgres/first_failures.py);
- given up (`give_up`), it is copied to CLUB_DLQ with its owner, reason and first
  failure, terminated, and its recorded time forgotten (`forget`, as on success);
- a job that outlasts ack_wait keeps its lease with in-progress acks
  (`keep_alive`), or a second worker would start it meanwhile.

What stays each runner's own: the consumer's batch, inbox transaction and stream
position; the worker's slots, rate limit and rest while our side is down; and how
each settles the rest (ack, NAK, whether a lost one is logged or raised).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Collection, Sequence
from datetime import UTC, datetime

import attrs
import sqlalchemy as sa
import structlog
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from structlog.contextvars import bound_contextvars

from adapters.nats.dead_letters import Owner, Unreadable, dead_letter
from adapters.nats.dlq import original_subject
from adapters.nats.streams import POISON_ATTEMPTS
from adapters.postgres.first_failures import FailureKey, FirstFailures
from adapters.reasons import describe
from adapters.transient import TRANSIENT
from application.backoff import BackoffPolicy
from application.contracts.envelope import Envelope, MalformedEnvelopeError

log = structlog.get_logger()

__all__ = ["DeliveryRuntime", "decode", "redelivered"]


def decode(msg: Msg) -> Envelope | Unreadable:
    """The envelope, or the message to dead-letter at once, whatever was raised:
    a message's content never ends a runner."""
    try:
        subject = original_subject(msg.subject, msg.headers)
        return Envelope.from_json(subject, msg.data)
    except MalformedEnvelopeError as e:
        return Unreadable(msg, msg.metadata.sequence.stream, f"malformed: {e}")
    except Exception as e:  # from_json wraps its own; this is a last guard
        reason = f"malformed: {describe(e)}"
        return Unreadable(msg, msg.metadata.sequence.stream, reason)


def redelivered(msg: Msg) -> bool:
    """Only a redelivery can have a first failure recorded: a message settled on
    its first delivery never touches the table."""
    return int(msg.metadata.num_delivered or 1) > 1


def _delivered(msg: Msg) -> int:
    return int(msg.metadata.num_delivered or 1)


@attrs.frozen
class DeliveryRuntime:
    """One durable's bookkeeping for failed messages. `role` ("consumer" or
    "worker") begins its log events' names, as each runner's own lines do."""

    name: str  # the durable: the dead letters' subject and the failures' key
    js: JetStreamContext
    owner: Owner
    failures: FirstFailures
    role: str
    # Why later messages need not wait behind a dead one (Club-Order).
    order: str
    poison_retry: BackoffPolicy = attrs.field(kw_only=True)
    poison_attempts: int = attrs.field(default=POISON_ATTEMPTS, kw_only=True)

    def key(self, msg: Msg) -> FailureKey:
        meta = msg.metadata
        return FailureKey(self.name, meta.stream, meta.sequence.stream, meta.timestamp)

    def poisoned(self, msg: Msg, error: Exception, failures: int) -> Unreadable | None:
        """A poison message's dead letter once it has failed so `poison_attempts`
        times (`failures`, from `poison_failures`); None: retry it after
        `retry_delay(failures)`."""
        if failures < self.poison_attempts:
            return None
        reason = f"poison: {describe(error)}"
        return Unreadable(msg, msg.metadata.sequence.stream, reason)

    def retry_delay(self, failures: int) -> float:
        """A poison message's NAK delay: a fixed schedule by its poison failures."""
        return self.poison_retry.delay(failures)

    def poison_failures(
        self, msgs: Sequence[Msg], *, within: sa.Connection | None
    ) -> list[int]:
        """One more poison failure of each, recorded with its first failure's time
        (`within`: the transaction it failed in, or None for one of its own); how
        many each has had, this one included. Blocking."""
        keys = [self.key(msg) for msg in msgs]
        counted = self.failures.count_poison(keys, datetime.now(UTC), within=within)
        return [counted[key] for key in keys]

    async def poison_failed(self, msg: Msg) -> int:
        """`poison_failures` of one message, off the event loop. With the table out
        of reach, JetStream's delivery count (never lower) bounds it instead."""
        try:
            [failures] = await asyncio.to_thread(
                self.poison_failures, [msg], within=None
            )
        except TRANSIENT as e:
            log.warning(f"{self.role}.poison_failure_uncounted", error=describe(e))
            return _delivered(msg)
        return failures

    def record(self, msgs: Collection[Msg], *, within: sa.Connection | None) -> None:
        """Now as the first failure of each (an earlier one is kept); `within`: the
        transaction whose failure it times, or None for one of its own. Blocking."""
        keys = [self.key(msg) for msg in msgs]
        self.failures.record(keys, datetime.now(UTC), within=within)

    async def failed(self, msg: Msg) -> None:
        """`record` in a transaction of its own, off the event loop."""
        try:
            await asyncio.to_thread(self.record, [msg], within=None)
        except TRANSIENT as e:  # the retry goes on; a later failure is recorded
            log.warning(f"{self.role}.first_failure_unrecorded", error=describe(e))

    def settled(self, msgs: Collection[Msg], *, within: sa.Connection) -> None:
        """Settled by the transaction `within`: a failure recorded for them goes
        with its commit. Blocking."""
        keys = [self.key(msg) for msg in msgs if redelivered(msg)]
        self.failures.forget(keys, within=within)

    async def forget(self, msgs: Collection[Msg]) -> None:
        """Settled: a failure recorded for them is no longer needed."""
        keys = [self.key(msg) for msg in msgs if redelivered(msg)]
        if not keys:
            return
        try:
            await asyncio.to_thread(self.failures.forget, keys)
        except TRANSIENT as e:  # a row left over is harmless
            log.warning(f"{self.role}.first_failure_kept", error=describe(e))

    async def give_up(
        self, items: Sequence[Unreadable], *, name_events: bool = False
    ) -> None:
        """Each to CLUB_DLQ with its first failure's time, terminated, then those
        times forgotten. A broker failure is raised: what was not copied stays
        unacked and comes back after ack_wait (its entry is one: Nats-Msg-Id).
        `name_events`: each line names the event by the relay's Nats-Msg-Id, for a
        caller (a batch) that has no event bound."""
        firsts = await self._first_failures([item.msg for item in items])
        for item, first in zip(items, firsts, strict=True):
            named = {}
            if name_events:
                named["event_id"] = (item.msg.headers or {}).get("Nats-Msg-Id", "")
            with bound_contextvars(**named):
                await dead_letter(
                    self.js,
                    self.name,
                    item,
                    self.owner,
                    self.order,
                    first_failed_at=first,
                )
        await self.forget([item.msg for item in items])

    async def _first_failures(self, msgs: Sequence[Msg]) -> list[datetime | None]:
        """Each message's recorded first failure; one not there fails for the first
        time now. All None when the table could not be read: the entries then say
        nothing rather than a wrong time (and nothing waits for the database)."""
        keys = {id(msg): self.key(msg) for msg in msgs if redelivered(msg)}
        found: dict[FailureKey, datetime] = {}
        if keys:
            try:
                wanted = list(keys.values())
                found = await asyncio.to_thread(self.failures.first, wanted)
            except TRANSIENT as e:
                log.warning(f"{self.role}.first_failure_unread", error=describe(e))
                return [None for _ in msgs]
        now = datetime.now(UTC)
        return [
            found.get(keys[id(msg)], now) if id(msg) in keys else now for msg in msgs
        ]

    @contextlib.asynccontextmanager
    async def keep_alive(self, msg: Msg, every: float) -> AsyncIterator[None]:
        """While the block runs, an in-progress ack (`+WPI`, which restarts the
        ack_wait clock) every `every` seconds, on the event loop beside the work."""
        beating = asyncio.create_task(self._beat(msg, every))
        try:
            yield
        finally:
            beating.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beating

    async def _beat(self, msg: Msg, every: float) -> None:
        while True:
            await asyncio.sleep(every)
            try:
                await msg.in_progress()
            except TRANSIENT as e:  # the next beat may get through
                log.warning(
                    f"{self.role}.heartbeat_lost",
                    **{self.role: self.name},
                    error=repr(e),
                )
