"""The main /ops page's DLQ audit trail: the dead letters a replay would hold back
past the e-mail provider's key lifetime, the replays that held entries back, and
the discards (newest first). Every value escaped."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from html import escape

from application import retention
from application.console_reads import KEY_BOUND_CONSUMERS, DeadLetter
from application.dlq_audit import DiscardRecord, HeldBackRecord
from application.ports import ConsoleReads
from entrypoints.ops.view import seconds

TRAIL_ROWS = 20  # audit rows the page shows of each kind
SHOWN_IDS = 5  # event ids listed per audit row; the rest are counted


async def dlq_trail(
    reads: ConsoleReads, entries: list[DeadLetter], key_lifetime_s: float
) -> str:
    """The main page's DLQ audit trail: what a replay holds back, what was
    discarded."""
    audit = reads.dlq_audit
    held, discards = await asyncio.to_thread(
        lambda: (audit.held_back(TRAIL_ROWS), audit.discards(TRAIL_ROWS))
    )
    return dlq_trail_section(
        entries=entries,
        key_lifetime_s=key_lifetime_s,
        now=datetime.now(UTC),
        held=held,
        discards=discards,
    )


def dlq_trail_section(
    *,
    entries: list[DeadLetter],
    key_lifetime_s: float,
    now: datetime,
    held: list[HeldBackRecord],
    discards: list[DiscardRecord],
) -> str:
    return _past_key_lifetime(entries, key_lifetime_s, now, held) + _discards(discards)


def _past_key_lifetime(
    entries: list[DeadLetter],
    key_lifetime_s: float,
    now: datetime,
    held: list[HeldBackRecord],
) -> str:
    lifetime = retention.shown(key_lifetime_s)
    waiting = [
        e
        for e in entries
        if e.consumer in KEY_BOUND_CONSUMERS
        and (now - e.failing_since()).total_seconds() > key_lifetime_s
    ]
    rows = "".join(
        f"<tr data-event='{escape(e.event_id)}'><td>{escape(e.consumer)}</td>"
        f"<td>{escape(e.event_id)}</td><td class='reason'>{escape(e.reason)}</td>"
        f"<td>{escape(seconds((now - e.failing_since()).total_seconds()))}</td></tr>"
        for e in waiting
    )
    now_held = (
        "<table id='past-key-lifetime'><thead><tr><th>consumer</th><th>event</th>"
        f"<th>reason</th><th>first failed</th></tr></thead><tbody>{rows}</tbody>"
        "</table>"
        if waiting
        else "<p>None in the DLQ now.</p>"
    )
    past = "".join(
        f"<tr data-replay='{escape(str(r.replay_id))}'>"
        f"<td>{escape(r.started_at.strftime('%Y-%m-%d %H:%M:%S'))}</td>"
        f"<td>{escape(r.operator)}</td><td>{escape(r.consumer)}</td>"
        f"<td class='count'>{r.held_back}</td><td>{_ids(r.event_ids)}</td></tr>"
        for r in held
    )
    replays = (
        "<table id='held-back'><thead><tr><th>replay at</th><th>by</th>"
        "<th>consumer</th><th>held back</th><th>events</th></tr></thead>"
        f"<tbody>{past}</tbody></table>"
        if held
        else ""
    )
    return (
        "<section id='key-lifetime'><h2>Dead letters past the e-mail provider's "
        f"key lifetime ({escape(lifetime)})</h2><p>A replay holds these back: the "
        "provider has forgotten their keys, so sending one again could send it "
        "twice. Check each on the provider's dashboard, then <code>club dlq replay "
        "--id EVENT_ID --past-key-lifetime</code>, or discard it.</p>"
        f"{now_held}{replays}</section>"
    )


def _discards(discards: list[DiscardRecord]) -> str:
    rows = "".join(
        f"<tr data-discard='{escape(str(d.discard_id))}'>"
        f"<td>{escape(d.started_at.strftime('%Y-%m-%d %H:%M:%S'))}</td>"
        f"<td>{escape(d.operator)}</td><td>{escape(d.consumer)}</td>"
        f"<td class='reason'>{escape(d.reason)}</td>"
        f"<td class='count'>{d.discarded}{' (dry run)' if d.dry_run else ''}</td>"
        f"<td>{_ids(d.event_ids)}</td><td>{escape(d.outcome)}</td></tr>"
        for d in discards
    )
    table = (
        "<table id='discards'><thead><tr><th>at</th><th>by</th><th>consumer</th>"
        "<th>why</th><th>discarded</th><th>events</th><th>outcome</th></tr>"
        f"</thead><tbody>{rows}</tbody></table>"
        if discards
        else "<p>No dead letter was discarded.</p>"
    )
    return (
        f"<section id='dlq-discards'><h2>Dead letters discarded</h2>{table}</section>"
    )


def _ids(ids: list[str]) -> str:
    shown = ", ".join(ids[:SHOWN_IDS])
    more = len(ids) - SHOWN_IDS
    return escape(shown + (f" and {more} more" if more > 0 else ""))
