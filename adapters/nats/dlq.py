"""The dead-letter queue as people use it: read the entries, hand them back.

Each `CLUB_DLQ` entry is a copy of a message one consumer gave up on, with headers
naming the consumer (its subject), where the message came from, why, how often it
was delivered and who owns it. A replay hands an entry back to **the one consumer
that failed it**: it is published to `club.replay.<consumer>.<rest of the original
subject>` in the `CLUB_REPLAY` stream, which only that consumer's replay durable
reads — so no other subscriber sees it again, and no duplicate window can swallow it
(its message id names the DLQ entry, not the event). Once handed back, the entry is
deleted from the DLQ: replaying again finds nothing to do, and a replay stopped
half-way resumes with exactly the entries still there. If the consumer fails the
message again, that is a new failure and a new entry.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig, DeliverPolicy, RawStreamMsg
from nats.js.errors import APIError, NotFoundError

from adapters.nats.streams import (
    ACK_WAIT_S,
    DLQ_STREAM,
    EVENTS_SUBJECTS,
    REPLAY_STREAM,
    REPLAY_SUBJECTS,
    ensure_consumer,
)
from application.console_reads import DeadLetter

REPLAY_PREFIX = REPLAY_SUBJECTS.removesuffix(".>")
EVENTS_PREFIX = EVENTS_SUBJECTS.removesuffix(".>")
EVENT_SUBJECT_TOKENS = 4  # club.events.<aggregate>.<Type>
REPLAY_HEADER = "Club-Replay"  # the DLQ entry it came from: consumers try afresh


# JetStream's answers to deleting what is gone: "no message found" at or below the
# stream's first sequence, "sequence N not found" for a hole inside it.
ALREADY_DELETED = frozenset({10057, 10043})


def replay_durable(consumer: str) -> str:
    return f"{consumer}-replay"


async def ensure_replay_consumer(
    js: JetStreamContext, consumer: str, *, ack_wait: float = ACK_WAIT_S
) -> None:
    """The durable through which a consumer receives what a replay hands back."""
    await ensure_consumer(
        js,
        replay_durable(consumer),
        ack_wait=ack_wait,
        stream=REPLAY_STREAM,
        filter_subject=f"{REPLAY_PREFIX}.{consumer}.>",
        max_ack_pending=1_000,
    )


def replay_subject(consumer: str, original_subject: str) -> str:
    rest = original_subject.removeprefix(f"{EVENTS_PREFIX}.")
    return f"{REPLAY_PREFIX}.{consumer}.{rest}"


def original_subject(subject: str, headers: dict[str, str] | None) -> str:
    """Where a message (or its replayed copy) was first published."""
    if subject.startswith(f"{REPLAY_PREFIX}."):
        original = (headers or {}).get("Club-Original-Subject")
        if original:
            return original
        _, _, consumer_and_rest = subject.partition(f"{REPLAY_PREFIX}.")
        return f"{EVENTS_PREFIX}.{consumer_and_rest.partition('.')[2]}"
    return subject


async def dead_letters(
    js: JetStreamContext, consumer: str | None = None
) -> AsyncIterator[DeadLetter]:
    """Every entry, oldest first (one consumer's, or all)."""
    subject = f"club.dlq.{consumer}" if consumer else "club.dlq.>"
    seq = 1
    while True:
        try:
            raw = await js.get_msg(DLQ_STREAM, seq=seq, subject=subject, next=True)
        except NotFoundError:
            return
        yield _entry(raw)
        seq = (raw.seq or seq) + 1


async def dead_lettered(js: JetStreamContext, consumer: str) -> set[str]:
    """Original event ids of a consumer's dead letters (read without consuming)."""
    try:
        sub = await js.subscribe(
            f"club.dlq.{consumer}",
            stream=DLQ_STREAM,
            ordered_consumer=True,
            config=ConsumerConfig(deliver_policy=DeliverPolicy.ALL),
        )
    except NotFoundError:  # no stream yet: no dead letters
        return set()
    info = await sub.consumer_info()
    # A push consumer starts delivering at once: what reached our buffer before
    # the info was taken counts as delivered, not pending. Both are to be read.
    delivered = info.delivered.consumer_seq if info.delivered else 0
    ids: set[str] = set()
    for _ in range((info.num_pending or 0) + (delivered or 0)):
        msg = await sub.next_msg(timeout=5)
        ids.add((msg.headers or {}).get("Club-Original-Msg-Id", ""))
    await sub.unsubscribe()
    return ids


async def hand_back(js: JetStreamContext, entry: DeadLetter) -> bool:
    """Publish the entry to its consumer's replay subject, then delete it. False
    when another replay handed it back first (its copy is the stream's duplicate:
    the same Nats-Msg-Id), so two operators racing move each entry once."""
    headers = {
        k: v for k, v in entry.headers.items() if not k.lower().startswith("nats-")
    }
    headers[REPLAY_HEADER] = str(entry.dlq_seq)
    headers["Club-Original-Subject"] = entry.original_subject
    headers["Nats-Msg-Id"] = f"replay:{entry.dlq_seq}"
    ack = await js.publish(
        replay_subject(entry.consumer, entry.original_subject),
        entry.data,
        stream=REPLAY_STREAM,
        headers=headers,
    )
    await remove(js, entry)
    return not ack.duplicate


async def remove(js: JetStreamContext, entry: DeadLetter) -> bool:
    """Delete the entry from the DLQ, handing nothing back (`club dlq discard`).
    False when it was gone already (a racing replay or discard took it)."""
    try:
        await js.delete_msg(DLQ_STREAM, entry.dlq_seq)
    except APIError as error:
        if error.err_code not in ALREADY_DELETED:
            raise
        return False
    return True


def _entry(raw: RawStreamMsg) -> DeadLetter:
    headers = {str(k): str(v) for k, v in (raw.headers or {}).items()}
    first = headers.get("Club-First-Failed-At")
    return DeadLetter(
        dlq_seq=int(raw.seq or 0),
        consumer=str(raw.subject or "").removeprefix("club.dlq."),
        original_subject=headers.get("Club-Original-Subject", ""),
        original_seq=_int(headers.get("Club-Original-Stream-Seq")),
        event_id=headers.get("Club-Original-Msg-Id", ""),
        reason=headers.get("Club-Reason", ""),
        owner=headers.get("Club-Owner", ""),
        deliveries=_int(headers.get("Club-Delivery-Count")),
        first_failed_at=_time(first),
        last_failed_at=raw.time or datetime.now(UTC),
        data=raw.data or b"",
        headers=headers,
    )


def event_type_of(subject: str) -> str:
    """The type a subject names (`club.events.<aggregate>.<Type>`), or "" if none."""
    parts = subject.split(".")
    if len(parts) == EVENT_SUBJECT_TOKENS and subject.startswith(f"{EVENTS_PREFIX}."):
        return parts[-1] if parts[-1].isidentifier() else ""
    return ""


def _time(text: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if text else None
    except ValueError:  # an entry published by someone else: not a time
        return None


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text else None
    except ValueError:
        return None
