"""A job worker: one durable JetStream consumer, a bounded pool, ack after the outcome.

Several worker processes share the durable consumer; JetStream hands each message
to one of them. Inside a process, `concurrency` tasks each hold at most one message,
so a work class never takes more than its share of the machine (urgent notifications
and heavy exports run as separate workers with separate pools). The job itself is a
use case (`handle`) that records its own state; this loop only turns its outcome
into the broker's verbs:

- `Done`: ack (after the state committed; a crash before the ack redelivers it,
  and the recorded state recognises it);
- `Retry(delay)`: NAK with that delay (exponential, jittered, capped, bounded by
  the use case's attempt limit; a provider's Retry-After is obeyed), the first
  such failure's time recorded (adapters/postgres/first_failures.py);
- `GiveUp(reason)`: copy to `CLUB_DLQ` with the reason, the owner (by the event's
  type) and the first failure's time, then terminate;
- a message that cannot be read: dead-lettered at once (permanent);
- our own database unreachable (transient): NAK with a delay that grows with the
  message's deliveries (`Outage.retry`: full jitter, capped), and every slot
  rests before it pulls again, a rest that grows with each wave of failures and
  starts afresh after any job that got through: an outage holds a slot's worth of
  messages instead of cycling the whole stream through failures, and one message
  that fails alone holds nobody up for long; after `Outage.attempts` deliveries
  the message is dead-lettered (its content may be what times out);
- the provider failing for everyone (its circuit open, adapters/nats/
  circuit_gate.py): no slot takes a message until a probe finds it back, and a
  message in hand is NAKed with the job's delay, its attempt given back;
- any other error (a bug this message meets): NAK with a growing delay
  (`POISON_RETRY`), and after `POISON_ATTEMPTS` such failures (counted in
  first_failures, not JetStream's deliveries) dead-lettered with the error: never
  a worker that exits, never a message retried for ever.

Reading, the poison bound, first failures and dead-lettering are the consumer
runner's too (adapters/nats/delivery.py); the slots, the rate limit and the rest
while our side is down are this worker's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable

import attrs
import structlog
from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext
from structlog.contextvars import bound_contextvars

from adapters.crash import crash_point
from adapters.metrics import EVENTS_APPLIED, count_retries, observe_wait
from adapters.nats.circuit_gate import CircuitGate
from adapters.nats.dead_letters import Owner, Unreadable
from adapters.nats.delivery import DeliveryRuntime, decode
from adapters.nats.dlq import REPLAY_HEADER, ensure_replay_consumer, replay_durable
from adapters.nats.pull import bind_pull
from adapters.nats.streams import (
    ACK_WAIT_S,
    EVENTS_STREAM,
    REPLAY_STREAM,
    ensure_consumer,
)
from adapters.postgres.first_failures import FirstFailures
from adapters.providers.metered import failures_seen, retry_class
from adapters.reasons import describe
from adapters.transient import TRANSIENT, Backoff
from application.backoff import BackoffPolicy, Jitter
from application.contracts.envelope import Envelope
from application.notifications import Done, GiveUp, Outcome, Retry
from application.personal_data import without_addresses

log = structlog.get_logger()

ORDER_NOTE = "each job stands alone: nothing waits behind it"
# A job that failed with a bug, redelivered after 1, 2, 4, 8 s: the cap is the
# delay before the last delivery POISON_ATTEMPTS allows.
POISON_RETRY = BackoffPolicy(first=1.0, cap=8.0, jitter=Jitter.NONE)
# Our side down: full jitter under 1 s doubling with each delivery, up to 60 s.
OUTAGE_RETRY = BackoffPolicy(first=1.0, cap=60.0, jitter=Jitter.FULL)

# A job for one message: its outcome, or None when the message asks for no work.
Job = Callable[[Envelope, bool], Awaitable[Outcome | None]]


@attrs.frozen
class Outage:
    """How a worker waits out its own side failing (our database unreachable)."""

    attempts: int = 10  # deliveries, then the DLQ (CLUB_NOTIFY_MAX_ATTEMPTS)
    retry: BackoffPolicy = OUTAGE_RETRY

    def delay(self, delivered: int) -> float:
        """The pause before the message's next delivery (or the slots' next pull,
        after that many waves of failures)."""
        return self.retry.delay(delivered)


async def ensure_worker_consumer(
    js: JetStreamContext,
    durable: str,
    filter_subject: str,
    *,
    ack_wait: float = ACK_WAIT_S,
    max_ack_pending: int = 1_000,
) -> None:
    """The durable pull consumer over the events a work class needs, and the one
    over what `club dlq replay` hands back to it."""
    await ensure_consumer(
        js,
        durable,
        ack_wait=ack_wait,
        filter_subject=filter_subject,
        max_ack_pending=max_ack_pending,
    )
    await ensure_replay_consumer(js, durable, ack_wait=ack_wait)


class RateLimit:
    """At most `per_second` starts per second, on an absolute schedule, so a worker
    paces itself under the provider's known limit instead of collecting 429s.

    A start that comes a little late (the event loop woke late) does not push the
    schedule back: the next sleeps are shorter, so the long-run rate stays the limit
    instead of losing each wake-up's overshoot. Only after an idle spell (more than
    one interval behind) does the schedule start afresh from now."""

    def __init__(
        self,
        per_second: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._interval = 1.0 / per_second
        self._clock = clock
        self._sleep = sleep
        self._next = clock()
        self._lock = asyncio.Lock()

    async def wait(self) -> None:
        async with self._lock:
            now = self._clock()
            if now - self._next > self._interval:  # idle: no catching up in a burst
                self._next = now
            delay = self._next - now
            self._next += self._interval
        if delay > 0:
            await self._sleep(delay)


class Worker:
    def __init__(
        self,
        *,
        name: str,
        js: JetStreamContext,
        job: Job,
        owner: Owner,
        failures: FirstFailures,
        concurrency: int = 8,
        rate: RateLimit | None = None,
        fetch_timeout: float = 1.0,
        outage: Outage | None = None,
        gate: CircuitGate | None = None,
    ) -> None:
        self.name = name
        self._js = js
        self._job = job
        # Unreadable, poison, given up: the same bookkeeping as a consumer's.
        self._delivery = DeliveryRuntime(
            name, js, owner, failures, "worker", ORDER_NOTE, poison_retry=POISON_RETRY
        )
        self._concurrency = concurrency
        self._rate = rate
        self._fetch_timeout = fetch_timeout
        self._outage = outage or Outage()
        self._gate = gate  # the provider's circuit: none taken while it is open
        self._resting_until = 0.0  # monotonic: no slot pulls before it
        self._failed_waves = 0  # rests in a row that ended in another failure
        self._probe = asyncio.Lock()  # the turn to pull while our side is down

    async def run(self, stop: asyncio.Event) -> None:
        """`concurrency` slots on the live events, one on what a replay hands back.

        Each slot pulls through a subscription of its own (one durable, many
        inboxes): slots sharing one, the answer to one slot's pull request was
        taken by another's, and eight slots whose jobs run in threads moved about
        as fast as one (ack_pending stayed at 1 while thousands waited)."""
        live = [
            await bind_pull(self._js, durable=self.name, stream=EVENTS_STREAM)
            for _ in range(self._concurrency)
        ]
        replayed = await bind_pull(
            self._js, durable=replay_durable(self.name), stream=REPLAY_STREAM
        )
        slots = [asyncio.create_task(self._slot(sub, stop)) for sub in live]
        slots.append(asyncio.create_task(self._slot(replayed, stop)))
        try:
            await asyncio.gather(*slots)
        finally:
            for slot in slots:
                slot.cancel()

    async def _slot(
        self, sub: JetStreamContext.PullSubscription, stop: asyncio.Event
    ) -> None:
        backoff = Backoff()
        while not stop.is_set():
            if await self._rest(stop):
                continue
            if self._gate is not None and not await self._gate.admits(stop):
                continue
            # While our side is down the slots take turns (a fair lock), and a
            # turn that ends in a failure starts a rest before the next: an outage
            # spends one message's delivery a rest, not one a slot.
            probing = self._failed_waves > 0
            async with self._probe if probing else contextlib.nullcontext():
                # A stop while this slot waited for its turn ends it here: the
                # slots queued behind one another would each pull for a
                # fetch_timeout first, and a stop would wait for all of them.
                if stop.is_set() or self._resting_until > time.monotonic():
                    continue
                try:
                    msgs = await sub.fetch(1, timeout=self._fetch_timeout)
                except (NatsTimeoutError, TimeoutError):
                    continue
                except TRANSIENT as e:  # the broker restarts: wait it out
                    log.warning("worker.fetch_failed", worker=self.name, error=repr(e))
                    await backoff.wait()
                    continue
                backoff.reset()
                for msg in msgs:
                    await self.handle(msg)

    async def _rest(self, stop: asyncio.Event) -> bool:
        """While our side is down, no slot pulls: True after a rest (or a stop)."""
        wait = self._resting_until - time.monotonic()
        if wait <= 0:
            return False
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), wait)
        return True

    async def handle(self, msg: Msg) -> None:
        """One message; every log line meanwhile names this worker (`consumer`)
        and, once the message reads, its `event_id` and `correlation_id` (the
        aggregate's id), so the lines of one enrollment can be followed."""
        with bound_contextvars(consumer=self.name):
            observe_wait(self.name, msg.metadata.num_delivered, msg.metadata.timestamp)
            envelope = decode(msg)
            if isinstance(envelope, Unreadable):
                await self._give_up(msg, envelope.reason)
                return
            with bound_contextvars(
                event_id=str(envelope.event_id),
                correlation_id=str(envelope.aggregate_id),
            ):
                await self._handle(msg, envelope)

    async def _handle(self, msg: Msg, envelope: Envelope) -> None:
        # A replay starts afresh on its first delivery only: a redelivery of it
        # (a lost term, a crash, a retry) goes on from where the first left off.
        replayed = (msg.headers or {}).get(REPLAY_HEADER) is not None and (
            msg.metadata.num_delivered or 1
        ) == 1
        if self._rate is not None:
            await self._rate.wait()
        try:
            with failures_seen() as seen:  # the provider's, for the retry's class
                outcome = await self._job(envelope, replayed)
            if outcome is not None:  # the job wrote to our side: it is back
                self._failed_waves = 0
        except TRANSIENT as e:  # our database: nothing decided, try again later
            await self._wait_out(msg, e)
            return
        except ValueError as e:  # unreadable data or an unknown schema: permanent
            await self._give_up(msg, f"unreadable: {e}")
            return
        except Exception as e:  # a bug met by this message: bounded, never a loop
            seq = msg.metadata.sequence.stream
            log.exception("worker.job_failed", worker=self.name, stream_seq=seq)
            failures = await self._delivery.poison_failed(msg)
            if dead := self._delivery.poisoned(msg, e, failures):
                await self._give_up(msg, dead.reason)
            else:
                count_retries(self.name, "unknown")
                await _quietly(msg.nak(delay=self._delivery.retry_delay(failures)))
            return
        match outcome:
            case None:  # an event that asks this work class for nothing
                EVENTS_APPLIED.labels(consumer=self.name).inc()
                await _quietly(msg.ack())
                await self._delivery.forget([msg])
            case Done():
                crash_point("worker.after_commit")  # state committed, not acked
                EVENTS_APPLIED.labels(consumer=self.name).inc()
                await _quietly(msg.ack())
                await self._delivery.forget([msg])
            case Retry(delay=delay, reason=reason):
                log.info(
                    "worker.retry_later", worker=self.name, delay=delay, reason=reason
                )
                count_retries(self.name, retry_class(seen))
                await self._failed(msg)
                await _quietly(msg.nak(delay=delay))
            case GiveUp(reason=reason):
                await self._give_up(msg, reason)

    async def _wait_out(self, msg: Msg, error: Exception) -> None:
        delivered = msg.metadata.num_delivered or 1
        if delivered >= self._outage.attempts:
            reason = f"our side failed on {delivered} deliveries: {describe(error)}"
            await self._give_up(msg, reason)
            return
        count_retries(self.name, "transient")
        self._rest_longer()
        delay = self._outage.delay(delivered)
        log.warning(
            "worker.retry", worker=self.name, delay=delay, error=describe(error)
        )
        await _quietly(msg.nak(delay=delay))

    def _rest_longer(self) -> None:
        """A failure after the last rest ended is one more wave: the next rest's
        ceiling doubles. Failures of the same wave (the other slots') do not."""
        now = time.monotonic()
        if now >= self._resting_until:
            self._failed_waves += 1
            self._resting_until = now + self._outage.delay(self._failed_waves)

    async def _failed(self, msg: Msg) -> None:
        """Its first failure's time, for the dead letter it may become."""
        await self._delivery.failed(msg)

    async def _give_up(self, msg: Msg, reason: str) -> None:
        # A job's reason may quote what a provider said, an address included.
        item = Unreadable(msg, msg.metadata.sequence.stream, without_addresses(reason))
        try:
            await self._delivery.give_up([item])
        except TRANSIENT as e:  # the broker: unacked, it comes back after ack_wait
            log.warning("worker.dead_letter_failed", worker=self.name, error=repr(e))


async def _quietly(verb: Awaitable[None]) -> None:
    """An ack or NAK lost with the connection: the broker redelivers after ack_wait,
    and the recorded state recognises the message."""
    try:
        await verb
    except TRANSIENT as e:
        log.warning("worker.ack_lost", error=repr(e))
