"""The DLQ's size and oldest age per consumer, read from JetStream when scraped.

A dead letter is an obligation someone owns; its count alone hides how long it has
waited (docs/background.md §33: length without age deceives). Reads the stream's
per-subject
counts and each subject's first message: a few requests per scrape, whatever the
DLQ's size.
"""

from __future__ import annotations

from datetime import UTC, datetime

from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from adapters.nats.streams import DLQ_STREAM, DLQ_SUBJECTS
from application.console_reads import DlqHop


async def dlq_hops(js: JetStreamContext) -> list[DlqHop]:
    try:
        info = await js.stream_info(DLQ_STREAM, subjects_filter=DLQ_SUBJECTS)
    except NotFoundError:
        return []
    now = datetime.now(UTC)
    hops = []
    for subject, count in sorted((info.state.subjects or {}).items()):
        oldest = await js.get_msg(DLQ_STREAM, seq=1, subject=subject, next=True)
        age = (now - oldest.time).total_seconds() if oldest.time else 0.0
        hops.append(
            DlqHop(subject.removeprefix("club.dlq."), int(count), max(age, 0.0))
        )
    return hops
