"""A `Worker` whose messages keep their lease while their job runs.

JetStream redelivers a message nobody acked within `ack_wait`. A heavy job (an
export of a big roster) may run longer than that; without a word from the worker,
a second worker would start the same export while the first still writes it. So,
while a job runs, this worker tells the broker "still working" (`+WPI`, an
in-progress ack, which restarts the ack_wait clock) every `ack_wait / 3`: two
beats may be lost before the lease lapses. A worker that dies stops beating, and
the message is redelivered within one ack_wait, as before.

The job knows nothing of this (the Worker stays generic): the beat
(`DeliveryRuntime.keep_alive`, adapters/nats/delivery.py) runs on the event loop
beside the job, whose blocking part runs in a thread. The beat follows
the durable's ack_wait as the broker holds it, read at start, so a durable created
with another ack_wait than this process was told cannot outlast the beat.
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog
from nats.aio.msg import Msg

from adapters.nats.streams import ACK_WAIT_S, EVENTS_STREAM
from adapters.nats.worker import Worker
from adapters.transient import TRANSIENT

log = structlog.get_logger()
BEATS_PER_ACK_WAIT = 3


class HeartbeatWorker(Worker):
    def __init__(self, *, ack_wait: float = ACK_WAIT_S, **worker: Any) -> None:
        """`ack_wait`: used only if the durable's cannot be read at start."""
        super().__init__(**worker)
        self.beat_every = ack_wait / BEATS_PER_ACK_WAIT

    async def run(self, stop: asyncio.Event) -> None:
        try:
            info = await self._js.consumer_info(EVENTS_STREAM, self.name)
        except TRANSIENT as e:
            log.warning("worker.ack_wait_unknown", worker=self.name, error=repr(e))
        else:
            if info.config.ack_wait:
                self.beat_every = info.config.ack_wait / BEATS_PER_ACK_WAIT
        await super().run(stop)

    async def handle(self, msg: Msg) -> None:
        async with self._delivery.keep_alive(msg, self.beat_every):
            await super().handle(msg)
