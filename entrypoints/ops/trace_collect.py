"""Collect one id's trace from PostgreSQL and JetStream, and give it as JSON.

`club trace ID` and `GET /ops/trace/{id}` both read through `collect` and `as_json`,
so they cannot disagree. The id names an aggregate: an enrollment, a purchase, an
export operation (or a lesson); its kind is read from its first stored event.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import attrs
from eventsourcing.persistence import Notification

from adapters.nats.streams import EVENTS_SUBJECTS
from adapters.nats.trace_messages import subject_matches
from adapters.postgres.saga_feed import WAKING_TOPICS
from application.club import ClubApplication
from application.console_reads import DurableView, InboxRow
from application.contracts.mapping import to_envelope
from application.exports import get_export
from application.next_steps import (
    ConsumerFact,
    EventFact,
    ExportFact,
    SagaFact,
    StreamFact,
    Trace,
    next_steps,
)
from application.notifications import request_for
from application.ports import ConsoleReads, TraceMessages, TraceRecords
from application.purchases import Purchases
from domain.export import Export
from entrypoints.config.catalogue import PROJECTIONS, WORK_CLASSES


async def collect(app: ClubApplication, reads: ConsoleReads, id_: UUID) -> Trace | None:
    """None: no event was ever stored under this id."""
    database = reads.trace_records
    messages = reads.trace_messages
    stored = await asyncio.to_thread(database.stored_events, id_)
    if not stored:
        return None
    events = [_event_fact(app, n) for n in stored]
    published = [e.event_id for e in events if e.event_id is not None]
    relay, inbox, notes = await asyncio.to_thread(
        lambda: (
            database.relay(),
            database.inbox_rows(published),
            database.notifications(published),
        )
    )
    durables = await messages.durable_views([*PROJECTIONS, *WORK_CLASSES])
    origins = {f"{id_}:{e.version}" for e in events}  # the relay's dead letters
    letters = await messages.letters_naming({str(i) for i in published} | origins)
    stream: dict[UUID, StreamFact] = {}
    consumers: list[ConsumerFact] = []
    for event in events:
        if event.event_id is None or event.subject is None:
            continue
        rows = [r for r in inbox if r.event_id == event.event_id]
        fact = await _locate(messages, event, rows, relay.published(event))
        stream[event.event_id] = fact
        consumers.extend(
            _consumer_fact(view, event, fact, rows, relay.published(event))
            for view in durables
            if subject_matches(_filter(view), event.subject)
        )
    kind = _kind(stored[0].topic)
    return Trace(
        id=id_,
        kind=kind,
        events=events,
        relay=relay,
        stream=stream,
        consumers=consumers,
        notifications=notes,
        dead_letters=letters,
        saga=await _saga(app, database, id_) if kind == "purchase" else None,
        export=await asyncio.to_thread(_export, app, id_) if kind == "export" else None,
    )


def _filter(view: DurableView) -> str:
    """The durable's filter; for one not yet created, the one migrate would give."""
    if view.exists and view.filter_subject:
        return view.filter_subject
    work = WORK_CLASSES.get(view.consumer)
    return work.subjects if work else EVENTS_SUBJECTS


def _kind(topic: str) -> str:
    """`domain.purchase:Purchase.Reserved` -> `purchase`."""
    return topic.partition(":")[2].partition(".")[0].lower() or topic


def _event_fact(app: ClubApplication, n: Notification) -> EventFact:
    name = n.topic.partition(":")[2] or n.topic
    try:
        domain_event = app.mapper.to_domain_event(n)
    except Exception:  # our own stored data this version cannot read: say so
        return EventFact(
            notification_id=n.id,
            version=n.originator_version,
            type=f"{name} (undecodable)",
            stored_at=None,
            event_id=None,
        )
    when = getattr(domain_event, "timestamp", None)
    envelope = to_envelope(domain_event)
    asks_for_email = False
    if envelope is not None:
        try:
            asks_for_email = request_for(envelope) is not None
        except ValueError:  # a reader refuses it: the worker dead-letters it
            asks_for_email = True
    return EventFact(
        notification_id=n.id,
        version=n.originator_version,
        type=name,
        stored_at=when if isinstance(when, datetime) else None,
        event_id=None if envelope is None else envelope.event_id,
        subject=None if envelope is None else envelope.subject,
        asks_for_email=asks_for_email,
        asks_for_export=isinstance(domain_event, Export.Requested),
        wakes_saga=n.topic in WAKING_TOPICS,
    )


async def _locate(
    messages: TraceMessages,
    event: EventFact,
    rows: list[InboxRow],
    published: bool,
) -> StreamFact:
    assert event.event_id is not None  # noqa: S101 - only published kinds come here
    if rows:
        seq = rows[0].stream_seq
        kept = await messages.message_at(seq, str(event.event_id))
        return StreamFact(
            event_id=event.event_id,
            seq=seq,
            found_by="inbox" if kept else "inbox; no longer in the stream",
            stored_at=None if kept is None else kept.stored_at,
        )
    if published and event.subject and event.stored_at:
        found = await messages.find_message(
            str(event.event_id), event.subject, event.stored_at
        )
        if found is not None:
            return StreamFact(
                event_id=event.event_id,
                seq=found.seq,
                found_by="stream search",
                stored_at=found.stored_at,
            )
    return StreamFact(event_id=event.event_id, seq=None, found_by="not found")


def _consumer_fact(
    view: DurableView,
    event: EventFact,
    where: StreamFact,
    rows: list[InboxRow],
    published: bool,
) -> ConsumerFact:
    assert event.event_id is not None  # noqa: S101 - only published kinds come here
    kind = "projection" if view.consumer in PROJECTIONS else "work class"
    row = next((r for r in rows if r.consumer == view.consumer), None)
    if row is not None:
        state = "applied"
    elif not view.exists:
        state = "no durable (run `club migrate`)"
    elif not published:
        state = "not yet published"
    elif where.seq is None:
        state = "unknown"
    elif where.seq <= view.ack_floor:
        state = "acked"
    elif where.seq <= view.delivered:
        state = "delivered"  # JetStream does not say if acked above the floor
    else:
        state = "waiting"
    return ConsumerFact(
        consumer=view.consumer,
        kind=kind,
        event_id=event.event_id,
        state=state,
        applied_at=None if row is None else row.applied_at,
        pending=view.unfinished,
        ack_floor=view.ack_floor,
        exists=view.exists,
    )


async def _saga(app: ClubApplication, database: TraceRecords, id_: UUID) -> SagaFact:
    view = await asyncio.to_thread(Purchases(app).view, id_)
    row, feed = await asyncio.to_thread(
        lambda: (database.saga_deadline(id_), database.saga_feed_position())
    )
    return SagaFact(
        status=view.status,
        next_step=view.next_step,
        payment_open=view.payment_open,
        payment_id=view.payment_id,
        refund_state=view.refund_state,
        review_owner=view.review_owner,
        review_reason=view.review_reason,
        enrollment_id=view.enrollment_id,
        has_deadline_row=row is not None,
        due_at=None if row is None else row.due_at,
        claimed_by=None if row is None else row.claimed_by,
        claimed_until=None if row is None else row.claimed_until,
        last_error=None if row is None else row.last_error,
        feed_position=feed,
    )


def _export(app: ClubApplication, id_: UUID) -> ExportFact:
    export = get_export(app, id_)
    return ExportFact(
        status=str(export.status),
        attempts=export.attempts,
        started_at=export.started_at,
        finished_at=export.finished_at,
        error=getattr(export, "error", None),
    )


STATE_WORDS = {
    "delivered": "delivered (above the ack floor: in hand, due again, or acked)",
    "waiting": "waiting (not yet delivered)",
}


def hops(trace: Trace, event: EventFact) -> list[dict[str, Any]]:
    """One event's way through the chain: each hop's state, time and record."""
    shown = [
        _hop(
            "event store",
            f"stored v{event.version}",
            event.stored_at,
            f"notification id {event.notification_id}",
        )
    ]
    if event.event_id is None:
        shown.append(_hop("relay", "internal: never published", None, "-"))
        return shown
    position = trace.relay.position
    where = trace.stream.get(event.event_id)
    shown.append(
        _hop(
            "relay",
            "published"
            if trace.relay.published(event)
            else f"not yet published (position {position})",
            None if where is None else where.stored_at,  # as the stream stored it
            f"relay_leases position {position}",
        )
    )
    if where is not None and where.seq is not None:
        shown.append(
            _hop(
                "stream",
                f"CLUB_EVENTS seq {where.seq}",
                where.stored_at,
                f"{event.subject} (found by {where.found_by})",
            )
        )
    elif trace.relay.published(event):
        shown.append(_hop("stream", "message not found", None, str(event.subject)))
    for c in trace.consumers:
        if c.event_id != event.event_id:
            continue
        record = (
            f"inbox ({c.consumer}, event id)"
            if c.state == "applied"
            else f"durable `{c.consumer}` ack floor {c.ack_floor}, "
            f"{c.pending} unfinished"
        )
        state = STATE_WORDS.get(c.state, c.state)
        shown.append(_hop(f"{c.kind} {c.consumer}", state, c.applied_at, record))
    for n in trace.notifications:
        if n.event_id == event.event_id:
            detail = f"{n.kind} e-mail {n.state}, attempts {n.attempts}"
            if n.last_error:
                detail += f", last error: {n.last_error}"
            shown.append(
                _hop(
                    "provider",
                    detail,
                    n.sent_at or n.updated_at,
                    "notifications row (event id)",
                )
            )
    for d in trace.letters_for(event):
        shown.append(
            _hop(
                f"DLQ {d.consumer}",
                f"dead-lettered: {d.reason} (owner {d.owner})",
                d.at,
                f"CLUB_DLQ seq {d.dlq_seq}",
            )
        )
    return shown


def _hop(hop: str, state: str, at: datetime | None, recorded_in: str) -> dict[str, Any]:
    return {"hop": hop, "state": state, "at": _time(at), "recorded_in": recorded_in}


def _time(at: datetime | None) -> str | None:
    if at is None:
        return None
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).isoformat()


def as_json(trace: Trace) -> dict[str, Any]:
    owed = next_steps(trace)
    relay = trace.relay
    return {
        "id": str(trace.id),
        "kind": trace.kind,
        "at": datetime.now(UTC).isoformat(),
        "relay": {
            "position": relay.position,
            "holder": relay.holder,
            "lease_until": _time(relay.lease_until),
            "live": relay.live,
        },
        "events": [
            {
                "notification_id": e.notification_id,
                "version": e.version,
                "type": e.type,
                "stored_at": _time(e.stored_at),
                "event_id": None if e.event_id is None else str(e.event_id),
                "subject": e.subject,
                "published": e.event_id is not None and relay.published(e),
                "stream_seq": _seq(trace, e),
                "hops": hops(trace, e),
            }
            for e in trace.events
        ],
        "notifications": [_plain(n) for n in trace.notifications],
        "dead_letters": [_plain(d) for d in trace.dead_letters],
        "saga": None if trace.saga is None else _plain(trace.saga),
        "export": None if trace.export is None else _plain(trace.export),
        "next_steps": [attrs.asdict(o) for o in owed],
        "done": not owed,
    }


def _seq(trace: Trace, event: EventFact) -> int | None:
    where = trace.stream.get(event.event_id) if event.event_id else None
    return None if where is None else where.seq


def _plain(record: Any) -> dict[str, Any]:
    values: dict[str, Any] = attrs.asdict(record)
    return {
        k: _time(v) if isinstance(v, datetime) else str(v) if isinstance(v, UUID) else v
        for k, v in values.items()
    }
