"""What JetStream knows of the chain: each durable's lag and its oldest waiting
message's age, and each stream's size.

A consumer's lag in events alone hides how long its oldest event has waited; the
age is read from the first message past its ack floor (one request per consumer).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from datetime import UTC, datetime

from nats.js import JetStreamContext
from nats.js.errors import Error as JetStreamError
from nats.js.errors import NotFoundError

from adapters.nats.dlq_metrics import dlq_hops
from adapters.nats.streams import DLQ_STREAM, EVENTS_STREAM, REPLAY_STREAM
from application.console_reads import ConsumerHop, DlqHop, StreamSize

# A user without read access gets no reply, only a timeout: do not wait for it.
READ_BUDGET_S = 1.0


class JetStreamChainLags:
    """The chain's lags (application/console_reads.py:ChainLags), read through one
    connection's JetStream context."""

    def __init__(self, js: JetStreamContext) -> None:
        self._js = js

    async def consumer_hops(self, durables: list[str]) -> list[ConsumerHop]:
        return await consumer_hops(self._js, durables)

    async def stream_sizes(self) -> list[StreamSize]:
        return await stream_sizes(self._js)

    async def dlq_hops(self) -> list[DlqHop]:
        return await dlq_hops(self._js)


async def consumer_hops(js: JetStreamContext, durables: list[str]) -> list[ConsumerHop]:
    return [await _consumer_hop(js, name) for name in durables]


async def stream_sizes(js: JetStreamContext) -> list[StreamSize]:
    sizes = []
    for stream in (EVENTS_STREAM, DLQ_STREAM, REPLAY_STREAM):
        try:
            state = (await js.stream_info(stream)).state
        except NotFoundError:
            continue
        sizes.append(
            StreamSize(stream=stream, messages=state.messages, bytes=state.bytes)
        )
    return sizes


async def _consumer_hop(js: JetStreamContext, name: str) -> ConsumerHop:
    try:
        info = await js.consumer_info(EVENTS_STREAM, name)
    except NotFoundError:
        return ConsumerHop(
            consumer=name,
            exists=False,
            num_pending=0,
            num_ack_pending=0,
            redelivered=0,
            waiting_pulls=0,
            oldest_age_seconds=None,
        )
    pending = int(info.num_pending or 0)
    in_hand = int(info.num_ack_pending or 0)
    age = None
    if pending + in_hand:
        floor = info.ack_floor.stream_seq if info.ack_floor else 0
        age = await _oldest_age(js, floor + 1, info.config.filter_subject)
    return ConsumerHop(
        consumer=name,
        exists=True,
        num_pending=pending,
        num_ack_pending=in_hand,
        redelivered=int(info.num_redelivered or 0),
        waiting_pulls=int(info.num_waiting or 0),
        oldest_age_seconds=age,
    )


async def _oldest_age(
    js: JetStreamContext, seq: int, subject: str | None
) -> float | None:
    """The age of the first message at or after `seq` (past the ack floor, so not
    yet acked), from its event's `occurred_at`: the student's wait began at the
    commit, not when the relay published it. None if the user may not read it."""
    try:
        msg = await asyncio.wait_for(
            js.get_msg(EVENTS_STREAM, seq=seq, subject=subject, next=True),
            READ_BUDGET_S,
        )
    except (NotFoundError, JetStreamError, TimeoutError):
        return None
    when = msg.time
    # Not our envelope: keep the time the stream stored it.
    with contextlib.suppress(ValueError, KeyError, TypeError):
        when = datetime.fromisoformat(json.loads(msg.data or b"{}")["occurred_at"])
    if when is None:
        return None
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    return max((datetime.now(UTC) - when).total_seconds(), 0.0)
