"""What JetStream knows of one event: its message, each durable's progress past it,
and the dead letters that name it.

JetStream cannot look a message up by its `Nats-Msg-Id`. Once any projection has
applied an event, its inbox row holds the stream sequence (the cheap, exact way);
before that, `find_message` searches the stream: the relay publishes in the log's
order, so the events' `occurred_at` nearly rises with the sequence — a binary
search on it, then a bounded scan of that subject comparing message ids. A
message not found that way is reported as not found, never guessed.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

from nats.js import JetStreamContext
from nats.js.api import RawStreamMsg
from nats.js.errors import Error as JetStreamError
from nats.js.errors import NotFoundError

from adapters.nats.dlq import dead_letters
from adapters.nats.streams import EVENTS_STREAM
from application.console_reads import DurableView, Found
from application.next_steps import DeadLetterFact

READ_BUDGET_S = 1.0  # one request; a user without read access gets only a timeout
# Events stored concurrently commit in a slightly different order than their
# timestamps; the scan starts this much earlier and stops this much later.
CLOCK_SLACK = timedelta(seconds=5)
MAX_SCAN = 2_000  # messages of the subject read after the binary search


class JetStreamTraceMessages:
    """A trace's messages (application/console_reads.py:TraceMessages), read
    through one connection's JetStream context."""

    def __init__(self, js: JetStreamContext) -> None:
        self._js = js

    async def durable_views(self, durables: list[str]) -> list[DurableView]:
        return await durable_views(self._js, durables)

    async def message_at(self, seq: int, event_id: str) -> Found | None:
        return await message_at(self._js, seq, event_id)

    async def find_message(
        self, event_id: str, subject: str, occurred_at: datetime
    ) -> Found | None:
        return await find_message(self._js, event_id, subject, occurred_at)

    async def letters_naming(self, ids: set[str]) -> list[DeadLetterFact]:
        return await letters_naming(self._js, ids)


async def durable_views(js: JetStreamContext, durables: list[str]) -> list[DurableView]:
    views = []
    for name in durables:
        try:
            info = await js.consumer_info(EVENTS_STREAM, name)
        except NotFoundError:
            views.append(
                DurableView(
                    consumer=name,
                    exists=False,
                    filter_subject=None,
                    ack_floor=0,
                    delivered=0,
                    unfinished=0,
                )
            )
            continue
        views.append(
            DurableView(
                consumer=name,
                exists=True,
                filter_subject=info.config.filter_subject,
                ack_floor=int(info.ack_floor.stream_seq or 0) if info.ack_floor else 0,
                delivered=int(info.delivered.stream_seq or 0) if info.delivered else 0,
                unfinished=int(info.num_pending or 0) + int(info.num_ack_pending or 0),
            )
        )
    return views


def subject_matches(pattern: str | None, subject: str) -> bool:
    """NATS wildcards: `*` one token, `>` the rest (at least one token)."""
    if not pattern:
        return True
    wanted, tokens = pattern.split("."), subject.split(".")
    for index, part in enumerate(wanted):
        if part == ">":
            return len(tokens) > index
        if index >= len(tokens) or part not in ("*", tokens[index]):
            return False
    return len(tokens) == len(wanted)


async def find_message(
    js: JetStreamContext, event_id: str, subject: str, occurred_at: datetime
) -> Found | None:
    """The stream sequence of the message whose `Nats-Msg-Id` is `event_id`."""
    try:
        state = (await js.stream_info(EVENTS_STREAM)).state
    except NotFoundError:
        return None
    if not state.messages:
        return None
    low, high = int(state.first_seq), int(state.last_seq) + 1
    earliest = occurred_at - CLOCK_SLACK
    while low < high:  # the first message of `subject` at or after `earliest`
        middle = (low + high) // 2
        msg = await _next(js, middle, subject)
        if msg is None or _occurred(msg) >= earliest:
            high = middle
        else:
            low = int(msg.seq or middle) + 1
    latest = occurred_at + CLOCK_SLACK
    seq = low
    for _ in range(MAX_SCAN):
        msg = await _next(js, seq, subject)
        if msg is None or _occurred(msg) > latest:
            return None
        if (msg.headers or {}).get("Nats-Msg-Id") == event_id:
            return Found(seq=int(msg.seq or seq), stored_at=msg.time)
        seq = int(msg.seq or seq) + 1
    return None


async def message_at(js: JetStreamContext, seq: int, event_id: str) -> Found | None:
    """The message at `seq` if it is still there and is this event's (retention
    may have removed it since a consumer recorded the sequence)."""
    try:
        msg = await asyncio.wait_for(js.get_msg(EVENTS_STREAM, seq), READ_BUDGET_S)
    except (NotFoundError, JetStreamError, TimeoutError):
        return None
    if (msg.headers or {}).get("Nats-Msg-Id") != event_id:
        return None
    return Found(seq=seq, stored_at=msg.time)


async def letters_naming(js: JetStreamContext, ids: set[str]) -> list[DeadLetterFact]:
    """Every CLUB_DLQ entry whose original message id is one of `ids` (a scan of
    the DLQ, which is small while operators keep it so)."""
    found = []
    async for entry in dead_letters(js):
        if entry.event_id in ids:
            found.append(
                DeadLetterFact(
                    dlq_seq=entry.dlq_seq,
                    consumer=entry.consumer,
                    event_id=entry.event_id,
                    reason=entry.reason,
                    owner=entry.owner,
                    at=entry.last_failed_at,
                )
            )
    return found


async def _next(js: JetStreamContext, seq: int, subject: str) -> RawStreamMsg | None:
    try:
        return await asyncio.wait_for(
            js.get_msg(EVENTS_STREAM, seq=seq, subject=subject, next=True),
            READ_BUDGET_S,
        )
    except (NotFoundError, JetStreamError, TimeoutError):
        return None


def _occurred(msg: RawStreamMsg) -> datetime:
    """The event's own time; a message that is not our envelope keeps the stream's."""
    try:
        when = datetime.fromisoformat(json.loads(msg.data or b"{}")["occurred_at"])
    except (ValueError, KeyError, TypeError):
        when = msg.time or datetime.now(UTC)
    return when if when.tzinfo else when.replace(tzinfo=UTC)
