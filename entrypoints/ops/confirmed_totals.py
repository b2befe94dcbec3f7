"""Confirmed enrollments in the event store (the truth) beside the statistics' count.

When the two agree, the chain (relay, broker, projector) has carried every one;
a benchmark waits on it, a fault test compares them after the dust settles.
"""

from __future__ import annotations

from application.console_reads import ConfirmedTotals
from application.ports import ConfirmedCounts

__all__ = ["ConfirmedTotals", "confirmed_totals"]


def confirmed_totals(counts: ConfirmedCounts) -> ConfirmedTotals:
    return counts.confirmed_totals()
