"""`club audit`: every published event up to the relay's position reached each consumer.

For each consumer, an event counts as accounted for when it has an inbox row (applied or
recognised) or a dead letter in CLUB_DLQ. Anything else is a hole: an event the broker
lost before the consumer saw it. `club relay rewind --to N` republishes from N.
Events from before a consumer's inbox horizon (retention trimmed their rows:
`adapters/postgres/retention.py`) cannot be checked that way and are not holes.
"""

from __future__ import annotations

import asyncio

import attrs

from application.ports import ConsoleReads
from entrypoints.config.catalogue import PROJECTIONS


@attrs.frozen
class Hole:
    consumer: str
    notification_id: int
    event_id: str
    type: str


async def find_holes(reads: ConsoleReads) -> list[Hole]:
    records = reads.audit_records
    published = await asyncio.to_thread(records.published_up_to_position)
    holes = []
    for consumer in PROJECTIONS:
        applied = await asyncio.to_thread(records.applied_event_ids, consumer)
        trimmed_before = await asyncio.to_thread(records.inbox_horizon, consumer)
        dead = await reads.dead_letters.event_ids(consumer)
        holes += [
            Hole(consumer, nid, event_id, kind)
            for nid, event_id, kind, occurred in published
            if event_id not in applied
            and event_id not in dead
            and (trimmed_before is None or occurred >= trimmed_before)
        ]
    return holes
