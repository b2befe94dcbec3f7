"""Copy a message a consumer will not apply to CLUB_DLQ, then terminate it.

The copy carries the payload (a terminated message's advisory carries none), where
it came from, how often it was delivered, when it first failed, why it was given up
and who answers for it (by consumer and event type, CLUB_DLQ_OWNERS), so an operator
can read, fix and replay it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import attrs
import structlog
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from adapters.metrics import DEAD_LETTERS
from adapters.nats.dlq import REPLAY_HEADER, event_type_of, original_subject
from adapters.nats.streams import EVENTS_STREAM
from adapters.reasons import one_line
from adapters.transient import TRANSIENT

log = structlog.get_logger()

NATS_DEFAULT_MAX_PAYLOAD = 1024 * 1024

# One consumer's owner rules: the event's type ("" when unreadable) -> the owner.
Owner = Callable[[str], str]


@attrs.frozen
class Unreadable:
    """A message given up: unreadable, a contract conflict, or a poison event."""

    msg: Msg
    stream_seq: int
    reason: str


async def dead_letter(
    js: JetStreamContext,
    consumer: str,
    item: Unreadable,
    owner: Owner,
    order: str = "",
    *,
    first_failed_at: datetime | None,
) -> None:
    """`order` says why later events of the same aggregate need not wait behind
    this one (or that they do), so the operator knows what a replay will meet.
    `first_failed_at`: this message's first failed attempt (this one, if it is the
    first); None when it could not be read (the entry then says nothing)."""
    meta = item.msg.metadata
    original = dict(item.msg.headers or {})
    replayed = REPLAY_HEADER in original  # keep where it first came from
    subject = original_subject(item.msg.subject, original)
    # The subject names the type even when the body is unreadable.
    named = one_line(owner(event_type_of(subject)))
    # JetStream acts on its own headers (Nats-Expected-Stream, Nats-Rollup, ...):
    # copied, a publisher's would make this copy fail on every redelivery.
    headers = {k: v for k, v in original.items() if not k.lower().startswith("nats-")}
    reason = one_line(item.reason)
    headers.update(
        {
            "Club-Original-Subject": subject,
            "Club-Delivery-Count": str(meta.num_delivered),
            "Club-Reason": reason,
            "Club-Owner": named,
            "Club-Order": one_line(order or "not stated"),
            # This delivery dead-lettered twice (a crash before the term) is one
            # entry; the same event failing again after a replay is a new one.
            "Nats-Msg-Id": f"{consumer}:{meta.stream}:{item.stream_seq}",
        }
    )
    if first_failed_at is not None:
        headers["Club-First-Failed-At"] = first_failed_at.isoformat()
    if not replayed:
        headers["Club-Original-Stream-Seq"] = str(item.stream_seq)
        headers["Club-Original-Msg-Id"] = original.get("Nats-Msg-Id", "")
        if meta.timestamp is not None:
            headers["Club-Original-Stored-At"] = meta.timestamp.isoformat()
    body = item.msg.data
    if len(body) + _headers_size(headers) > _max_payload(js):
        # A body near the broker's limit plus our headers would be refused (and
        # the connection closed) on every redelivery: keep the headers, point to
        # the original, and the consumer goes on.
        headers["Club-Body-Omitted"] = (
            f"{len(body)} bytes: too large with these headers; the original is "
            f"{EVENTS_STREAM} sequence {item.stream_seq}"
        )
        body = b""
    await js.publish(f"club.dlq.{consumer}", body, headers=headers)
    log.error(
        "consumer.dead_lettered",
        consumer=consumer,
        stream_seq=item.stream_seq,
        reason=reason,
        owner=named,
    )
    DEAD_LETTERS.labels(consumer=consumer, reason=reason.split(":")[0]).inc()
    try:
        await item.msg.term()
    except TRANSIENT as e:  # it comes back after ack_wait; its entry is one (Msg-Id)
        log.warning("consumer.term_lost", consumer=consumer, error=repr(e))


def _headers_size(headers: dict[str, str]) -> int:
    """Bytes of the NATS/1.0 header block, with room to spare."""
    lines = sum(len(f"{k}: {v}\r\n".encode()) for k, v in headers.items())
    return len("NATS/1.0\r\n\r\n") + lines + 64


def _max_payload(js: JetStreamContext) -> int:
    """The server's limit on headers + body (the client checks the body only)."""
    client = getattr(js, "_nc", None)  # JetStreamContext keeps its client private
    return int(getattr(client, "max_payload", NATS_DEFAULT_MAX_PAYLOAD))
