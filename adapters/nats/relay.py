"""The outbox relay: notification log -> JetStream, in order, at least once.

It reads the event store's notification log after its recorded position, publishes a
batch with pipelined PubAcks, waits for all of them (bounded by a timeout, so a lost
PubAck cannot hang it), and only then records the new position. A crash in between
republishes the batch with the same `Nats-Msg-Id`s, which the stream deduplicates
within its window and consumers deduplicate by `event_id` after it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence

import psycopg
import sqlalchemy as sa
import structlog
from eventsourcing.persistence import ApplicationRecorder, Mapper, Notification
from nats.js import JetStreamContext
from sqlalchemy.dialects.postgresql import insert

from adapters.postgres.tables import relay_positions
from application.contracts.envelope import Envelope
from application.contracts.mapping import to_envelope

log = structlog.get_logger()


class Relay:
    def __init__(
        self,
        *,
        recorder: ApplicationRecorder,
        mapper: Mapper,
        engine: sa.Engine,
        js: JetStreamContext,
        listen_dsn: str,
        channel: str = "club_events",
        name: str = "default",
        batch_size: int = 500,
        puback_timeout: float = 10.0,
        idle_poll: float = 1.0,
    ) -> None:
        self._recorder = recorder
        self._mapper = mapper
        self._engine = engine
        self._js = js
        self._listen_dsn = listen_dsn
        self._channel = channel
        self.name = name
        self._batch_size = batch_size
        self._puback_timeout = puback_timeout
        self._idle_poll = idle_poll
        self._woken = asyncio.Event()
        self.position = -1  # not loaded yet

    async def run(self, stop: asyncio.Event) -> None:
        listener = asyncio.create_task(self._listen(stop))
        try:
            while not stop.is_set():
                published = await self.relay_once()
                if not published:
                    await self._wait_for_news(stop)
        finally:
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await listener

    async def relay_once(self) -> int:
        """Publish the next batch; returns how many notifications it consumed."""
        self._woken.clear()
        if self.position < 0:
            self.position = await asyncio.to_thread(self._load_position)
        notifications = await asyncio.to_thread(self._read_batch)
        if not notifications:
            return 0
        envelopes = [e for e in map(self._envelope, notifications) if e is not None]
        await self._publish(envelopes)
        new_position = notifications[-1].id
        await asyncio.to_thread(self._save_position, new_position)
        self.position = new_position
        return len(notifications)

    def _read_batch(self) -> Sequence[Notification]:
        # Ids have gaps (a failed insert uses one up): resume after the last id
        # seen, never wait for the next number.
        return self._recorder.select_notifications(
            start=self.position, limit=self._batch_size, inclusive_of_start=False
        )

    def _envelope(self, notification: Notification) -> Envelope | None:
        return to_envelope(self._mapper.to_domain_event(notification))

    async def _publish(self, envelopes: list[Envelope]) -> None:
        futures = [
            await self._js.publish_async(
                envelope.subject,
                envelope.to_json(),
                headers={
                    "Nats-Msg-Id": str(envelope.event_id),
                    "Club-Event-Type": envelope.type,
                    "Club-Schema-Version": str(envelope.schema_version),
                },
            )
            for envelope in envelopes
        ]
        try:
            await asyncio.wait_for(asyncio.gather(*futures), self._puback_timeout)
        except BaseException:
            for future in futures:
                future.cancel()  # frees the client's pending slots
            raise

    def _load_position(self) -> int:
        with self._engine.begin() as conn:
            conn.execute(
                insert(relay_positions)
                .values(relay=self.name, position=0)
                .on_conflict_do_nothing()
            )
            return int(
                conn.execute(
                    sa.select(relay_positions.c.position).where(
                        relay_positions.c.relay == self.name
                    )
                ).scalar_one()
            )

    def _save_position(self, position: int) -> None:
        with self._engine.begin() as conn:
            conn.execute(
                sa.update(relay_positions)
                .where(
                    (relay_positions.c.relay == self.name)
                    & (relay_positions.c.position < position)
                )
                .values(position=position, updated_at=sa.func.now())
            )

    async def _wait_for_news(self, stop: asyncio.Event) -> None:
        """Sleep until NOTIFY, a stop, or the catch-up poll, whichever comes first."""
        waiters = [asyncio.ensure_future(self._woken.wait())]
        waiters.append(asyncio.ensure_future(stop.wait()))
        _, pending = await asyncio.wait(
            waiters, timeout=self._idle_poll, return_when=asyncio.FIRST_COMPLETED
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
                    async for _ in conn.notifies():
                        self._woken.set()
            except psycopg.Error as e:
                log.warning("relay.listen_lost", error=str(e))
                self._woken.set()  # catch up on whatever we missed
                await asyncio.sleep(1)
