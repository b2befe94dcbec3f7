"""The main /ops page's DLQ audit trail, read: the replays that held entries back
past the e-mail provider's key lifetime, and the discards (newest first)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from application.console_reads import DeadLetter
from application.ports import ConsoleReads
from entrypoints.ops.work_html import dlq_trail_section

TRAIL_ROWS = 20  # audit rows the page shows of each kind


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
