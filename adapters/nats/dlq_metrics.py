"""The DLQ's size and oldest age per consumer, read from JetStream when scraped.

A dead letter is an obligation someone owns; its count alone hides how long it has
waited (docs/background.md §33: length without age deceives). Reads the stream's
per-subject
counts and each subject's first message: a few requests per scrape, whatever the
DLQ's size — and, for the entries within a day of the stream's max_age (which
JetStream then drops unseen), one request for each of those.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from nats.js import JetStreamContext
from nats.js.api import RawStreamMsg
from nats.js.errors import NotFoundError

from adapters.nats.streams import DLQ_STREAM, DLQ_SUBJECTS
from application.console_reads import EXPIRING_WITHIN_S, DlqHop

EXPIRING_READ = 1_000  # a scrape reads at most this many entries a consumer


async def dlq_hops(js: JetStreamContext) -> list[DlqHop]:
    try:
        info = await js.stream_info(DLQ_STREAM, subjects_filter=DLQ_SUBJECTS)
    except NotFoundError:
        return []
    now = datetime.now(UTC)
    max_age = float(info.config.max_age or 0)  # 0: the stream keeps them for ever
    hops = []
    for subject, count in sorted((info.state.subjects or {}).items()):
        oldest = await js.get_msg(DLQ_STREAM, seq=1, subject=subject, next=True)
        age = (now - oldest.time).total_seconds() if oldest.time else 0.0
        expiring = (
            await _expiring(js, subject, oldest, now - timedelta(seconds=max_age))
            if max_age
            else 0
        )
        hops.append(
            DlqHop(
                subject.removeprefix("club.dlq."),
                int(count),
                max(age, 0.0),
                expiring,
            )
        )
    return hops


async def _expiring(
    js: JetStreamContext, subject: str, oldest: RawStreamMsg, expires_before: datetime
) -> int:
    """Entries the stream drops within a day (EXPIRING_WITHIN_S), oldest first:
    read one by one up to the first that is not, at most EXPIRING_READ of them."""
    cutoff = expires_before + timedelta(seconds=EXPIRING_WITHIN_S)
    found, msg = 0, oldest
    while msg.time is not None and msg.time < cutoff and found < EXPIRING_READ:
        found += 1
        try:
            msg = await js.get_msg(
                DLQ_STREAM, seq=(msg.seq or 0) + 1, subject=subject, next=True
            )
        except NotFoundError:
            break
    return found
