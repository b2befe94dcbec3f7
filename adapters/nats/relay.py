"""The outbox relay: notification log -> JetStream, in order, at least once.

It reads the event store's notification log after the shared position, publishes a
batch with pipelined PubAcks (`BatchPublisher`), waits for all of them (bounded by a
timeout, so a lost PubAck cannot hang it), and only then moves the position. A crash
in between republishes the batch with the same `Nats-Msg-Id`s, which the stream
deduplicates within its window and consumers deduplicate by `event_id` after it.
While the PubAcks arrive it already reads the next batch and builds its messages in
a thread, used only if the position then is the one that batch was read after.

Several relays may run: one holds the lease and publishes, the others wait to take
over. The position moves only under the holder's epoch (see `RelayLease`).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import socket
import time
from collections.abc import Sequence
from typing import Any
from uuid import UUID, uuid4

import attrs
import psycopg
import sqlalchemy as sa
import structlog
from eventsourcing.persistence import ApplicationRecorder, Mapper, Notification
from nats.aio.client import Client
from structlog.contextvars import bound_contextvars

from adapters.crash import crash_point
from adapters.metrics import DEAD_LETTERS, EVENTS_PUBLISHED
from adapters.nats.batch_publish import BatchPublisher, MessageTooLargeError, Outgoing
from adapters.nats.streams import DLQ_STREAM, EVENTS_STREAM, dead_letter_subject
from adapters.postgres.lease import RELAY_LEASE, FencedError, RelayLease
from adapters.postgres.recorder import select_stretch_of
from adapters.reasons import describe, one_line
from adapters.transient import TRANSIENT, Backoff
from application.contracts.envelope import Envelope
from application.contracts.mapping import PUBLISHED_TOPICS, published_envelope
from application.dlq_owners import DEFAULT_OWNER, RELAY_DLQ

log = structlog.get_logger()


def owner_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid4().hex[:6]}"


@attrs.frozen
class Unmappable:
    """A stored event the relay cannot map to its contract (a topic this version
    does not know, state it cannot decode): dead-lettered, never a relay that
    crash-loops on it and stops the whole outbox."""

    notification: Notification
    reason: str


@attrs.frozen
class Batch:
    after: int  # the position it was read after
    notifications: Sequence[Notification]
    events: list[Outgoing]  # the published events, in order
    unmappable: list[Unmappable] = attrs.Factory(list)
    dead_letters: list[Outgoing] = attrs.Factory(list)  # one for each unmappable
    at_end: bool = False  # the log ended with it when it was read


class Relay:
    def __init__(
        self,
        *,
        recorder: ApplicationRecorder,
        mapper: Mapper[UUID],
        engine: sa.Engine,
        nc: Client,
        listen_dsn: str,
        channel: str = "club_events",
        name: str = RELAY_LEASE,
        batch_size: int = 1000,
        puback_timeout: float = 5.0,
        idle_poll: float = 1.0,
        lease_seconds: float = 10.0,
        dead_letter_owner: str = DEFAULT_OWNER,
    ) -> None:
        self._recorder = recorder
        self._mapper = mapper
        self._nc = nc
        self._publisher = BatchPublisher(nc)
        self._listen_dsn = listen_dsn
        self._channel = channel
        self._dead_letter_owner = dead_letter_owner
        self._batch_size = batch_size
        self._puback_timeout = puback_timeout
        self._idle_poll = min(idle_poll, lease_seconds / 3)
        self.lease = RelayLease(
            engine, name=name, owner=owner_name(), ttl=lease_seconds
        )
        self._woken = asyncio.Event()
        self._renew_every = lease_seconds / 3
        self._renewed_at = -math.inf  # monotonic: it counts time spent paused too
        self._next: asyncio.Future[Batch] | None = None  # the prefetched batch
        self.epoch: int | None = None  # None: not the owner
        self.position = 0
        # The last batch reached the log's end: the loop waits for a NOTIFY (or
        # the poll) instead of reading nothing. `_woken` is cleared as each read
        # is sent, so news heard since it began still wakes the loop at once.
        self.caught_up = False

    async def run(self, stop: asyncio.Event) -> None:
        listener = asyncio.create_task(self._listen(stop))
        backoff = Backoff()
        try:
            while not stop.is_set():
                try:
                    if not await self.try_acquire():
                        await self._wait(stop, self._idle_poll)  # standby
                        continue
                    published = await self.relay_once()
                except FencedError as e:
                    log.warning("relay.fenced", owner=self.lease.owner, error=str(e))
                    self.epoch = None
                    self.forget_prefetched()
                    continue
                except MessageTooLargeError as e:  # the broker's setting: wait for it
                    log.error("relay.message_too_large", error=str(e))
                    self.forget_prefetched()
                    await backoff.wait()
                    # A client learns max_payload when it connects: a broker that
                    # raised it by a reload is heard only through a new connection.
                    await self._nc.force_reconnect()
                    continue
                except TRANSIENT as e:  # the batch is republished from the position
                    log.warning("relay.retry", error=repr(e))
                    self.forget_prefetched()
                    await backoff.wait()
                    continue
                backoff.reset()
                if not published or self.caught_up:
                    await self._wait(stop, self._idle_poll, self._woken)
        finally:
            self.forget_prefetched()
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await listener
            with contextlib.suppress(*TRANSIENT):
                await self.release()
            with contextlib.suppress(*TRANSIENT):
                await self._publisher.close()

    async def release(self) -> None:
        """Hand the lease over at once (clean stop) instead of letting it run out."""
        if self.epoch is not None:
            await asyncio.to_thread(self.lease.release, self.epoch)
            self.epoch = None

    async def try_acquire(self) -> bool:
        if self.epoch is None:
            held = await asyncio.to_thread(self.lease.acquire)
            if held is None:
                return False
            self.epoch, self.position = held.epoch, held.position
            self._renewed_at = time.monotonic()
            log.info("relay.acquired", owner=self.lease.owner, epoch=self.epoch)
        return True

    async def relay_once(self) -> int:
        """Publish the next batch; returns how many notifications it consumed."""
        if not await self.try_acquire():
            return 0
        epoch = self.epoch
        assert epoch is not None  # noqa: S101 - try_acquire just set it
        if time.monotonic() - self._renewed_at > self._renew_every:
            self.position = await asyncio.to_thread(self.lease.renew, epoch)
            self._renewed_at = time.monotonic()
        self.caught_up = False
        batch = await self._take_batch()
        if not batch.notifications:
            return 0
        # Every line about this batch says which notifications it holds.
        with bound_contextvars(
            first_notification_id=batch.notifications[0].id,
            last_notification_id=batch.notifications[-1].id,
        ):
            published = await self._publish(epoch, batch)
        self.caught_up = batch.at_end
        return published

    async def _publish(self, epoch: int, batch: Batch) -> int:
        crash_point("relay.after_read")
        self._report_unmappable(batch.unmappable)
        stored = await self._publisher.send(batch.events + batch.dead_letters)
        crash_point("relay.after_publish")
        new_position = batch.notifications[-1].id
        if not batch.at_end:  # at the end, a read now would find nothing
            self._prefetch(new_position)  # read and map the next while acks arrive
        await self._await_acks(stored)
        EVENTS_PUBLISHED.inc(len(batch.events))
        crash_point("relay.after_puback")
        await asyncio.to_thread(self.lease.advance, epoch, new_position)
        self._renewed_at = time.monotonic()  # advancing extended the lease
        self.position = new_position
        return len(batch.notifications)

    def forget_prefetched(self) -> None:
        """After a failure the next batch is read afresh from the position."""
        if self._next is not None:
            self._next.cancel()  # a read already running in its thread just ends
            self._next.add_done_callback(_retrieve)
            self._next = None

    async def _take_batch(self) -> Batch:
        prefetched, self._next = self._next, None
        if prefetched is not None:
            batch = await prefetched
            # Empty is stale: what committed since would wait for the next NOTIFY.
            if batch.after == self.position and batch.notifications:
                return batch
        self._woken.clear()  # a commit the read misses sends its NOTIFY after this
        return await asyncio.to_thread(self._read, self.position)

    def _prefetch(self, after: int) -> None:
        self._woken.clear()  # as in `_take_batch`: news from here on is news
        self._next = asyncio.ensure_future(asyncio.to_thread(self._read, after))

    def _read(self, after: int) -> Batch:
        # Ids have gaps (a failed insert uses one up): resume after the last id
        # seen, never wait for the next number.
        # Only published rows (and the stretch's last): the server skips the rest.
        stretch = select_stretch_of(
            self._recorder, PUBLISHED_TOPICS, after=after, limit=self._batch_size
        )
        notifications = stretch.notifications
        events: list[Outgoing] = []
        unmappable: list[Unmappable] = []
        for notification in notifications:
            try:
                envelope = published_envelope(self._mapper, notification)
                if envelope is not None:
                    events.append(event_message(envelope))
            except Exception as e:  # our own stored data: dead-letter, do not stop
                unmappable.append(Unmappable(notification, describe(e)))
        dead_letters = [self._dead_letter(item) for item in unmappable]
        return Batch(
            after,
            notifications,
            events,
            unmappable,
            dead_letters,
            at_end=stretch.at_end,
        )

    def _dead_letter(self, item: Unmappable) -> Outgoing:
        """`club.dlq.relay`: the stored event as it is, why, and how to recover."""
        n = item.notification
        origin = f"{n.originator_id}:{n.originator_version}"
        recovery = f"fix the mapping, then club relay rewind --to {n.id}"
        letter = Outgoing(
            dead_letter_subject(RELAY_DLQ),
            n.state,
            {
                "Nats-Msg-Id": f"{RELAY_DLQ}:{n.id}",
                "Club-Reason": one_line(f"unmappable: {item.reason}"),
                "Club-Owner": self._dead_letter_owner,
                "Club-Original-Subject": f"notification:{n.topic}",
                "Club-Original-Stream-Seq": str(n.id),
                "Club-Original-Msg-Id": origin,
                "Club-Recovery": recovery,
            },
            DLQ_STREAM,
        )
        if letter.size <= self._nc.max_payload:
            return letter
        # Unmappable state too large to carry would stop the relay for good: the
        # event store keeps it, the entry says where.
        omitted = (
            f"{len(n.state)} bytes: too large for the broker; the stored event "
            f"is notification {n.id}"
        )
        return Outgoing(
            letter.subject,
            b"",
            letter.headers | {"Club-Body-Omitted": omitted},
            DLQ_STREAM,
        )

    @staticmethod
    def _report_unmappable(unmappable: list[Unmappable]) -> None:
        for item in unmappable:
            log.error(
                "relay.unmappable_event",
                notification_id=item.notification.id,
                topic=item.notification.topic,
                reason=item.reason,
            )
            DEAD_LETTERS.labels(consumer=RELAY_DLQ, reason="unmappable").inc()

    async def _await_acks(self, stored: asyncio.Future[None]) -> None:
        # On a timeout `wait_for` cancels it: the batch's late acks are dropped.
        await asyncio.wait_for(stored, self._puback_timeout)

    async def _wait(
        self, stop: asyncio.Event, timeout: float, news: asyncio.Event | None = None
    ) -> None:
        """Sleep until news (NOTIFY), a stop, or the timeout, whichever comes first."""
        waiters = [asyncio.ensure_future(stop.wait())]
        if news is not None:
            waiters.append(asyncio.ensure_future(news.wait()))
        _, pending = await asyncio.wait(
            waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
        )
        for waiter in pending:
            waiter.cancel()

    async def _listen(self, stop: asyncio.Event) -> None:
        """Wake the loop on the event store's NOTIFY; reconnect if it drops."""
        while not stop.is_set():
            try:
                async with await psycopg.AsyncConnection.connect(
                    self._listen_dsn, autocommit=True, connect_timeout=5
                ) as conn:
                    await conn.execute(f'LISTEN "{self._channel}"')
                    self._woken.set()  # what committed before LISTEN sent us no news
                    async for _ in conn.notifies():
                        self._woken.set()
            except psycopg.Error as e:
                log.warning("relay.listen_lost", error=str(e))
                self._woken.set()  # catch up on whatever we missed
                await asyncio.sleep(1)


def _retrieve(future: asyncio.Future[Any]) -> None:
    """A discarded prefetch may have failed; its error is not news."""
    if not future.cancelled():
        future.exception()


def event_message(envelope: Envelope) -> Outgoing:
    """A published event as it goes out: its `event_id` is the stream's dedup key."""
    return Outgoing(
        envelope.subject,
        envelope.to_json(),
        {
            "Nats-Msg-Id": str(envelope.event_id),
            "Club-Event-Type": envelope.type,
            "Club-Schema-Version": str(envelope.schema_version),
        },
        EVENTS_STREAM,
    )
