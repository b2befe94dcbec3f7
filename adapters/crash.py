"""Named crash points: `CLUB_CRASH_AT=<point>` makes the process SIGKILL itself there.

Fault tests use them to die at exactly the boundaries the guarantees talk about
(docs/guarantees.md). Unset, a crash point costs one dictionary lookup.
"""

from __future__ import annotations

import os
import signal

POINTS = frozenset(
    {
        "api.before_commit",  # the insert built, not sent: nothing can commit
        "api.after_commit",  # committed, answer not stored or sent
        "relay.after_read",  # batch read from the notification log
        "relay.after_publish",  # batch sent, PubAcks not awaited
        "relay.after_puback",  # every PubAck in, position not saved
        "consumer.after_receive",  # batch fetched, nothing committed
        "consumer.after_commit",  # inbox + effect committed, not acked
        "worker.after_accept",  # the provider accepted; `sent` not yet committed
        "worker.after_commit",  # `sent` committed, not acked
        "saga.after_charge",  # the provider answered the charge; nothing recorded
        "saga.after_refund_accepted",  # the provider took the refund; not recorded
        "saga.after_step",  # a purchase advanced; its next deadline not written
    }
)


def crash_point(name: str) -> None:
    if os.environ.get("CLUB_CRASH_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)


def check_crash_setting() -> None:
    """Refuse a misspelt point at start-up instead of silently never crashing."""
    wanted = os.environ.get("CLUB_CRASH_AT")
    if wanted and wanted not in POINTS:
        msg = f"CLUB_CRASH_AT={wanted!r} is not one of: {', '.join(sorted(POINTS))}"
        raise ValueError(msg)
