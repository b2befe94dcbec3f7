"""What the `/ops/` page shows, in plain words, from the document `/ops/status` serves.

The page reads `as_json(read_chain(...))` like `club status --json` and `/ops/status`,
so the three cannot disagree; this module only turns that document (and the DLQ's
entries) into rows and sentences. No HTML here: entrypoints/ops/html.py draws it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import attrs

from application.console_reads import DeadLetter
from entrypoints.ops.chain_status import (
    DEADLINES_HOP,
    NO_DEAD_LETTERS,
    OUTBOX_HOP,
    consumer_detail,
    dlq_hop,
    roles_alive,
    stalled_fact,
)

ON_TIME = "on time"
NEVER_DRAINS = "never drains"
MINUTE, HOUR = 60.0, 3600.0


@attrs.frozen(kw_only=True)
class HopRow:
    key: str  # names the hop in the history and in the page (data-hop)
    label: str
    count: int
    oldest_seconds: float | None  # None: nothing waits
    lag: str  # events and seconds behind, where the hop has a lag
    detail: str


@attrs.frozen(kw_only=True)
class RoleRow:
    role: str  # as `club` names it: worker notifications
    instance: str  # "" for a role none of whose processes beats
    last_beat_seconds: float | None  # None: none beats


@attrs.frozen(kw_only=True)
class Verdict:
    on_time: bool
    headline: str
    details: list[str]


@attrs.frozen(kw_only=True)
class ReasonGroup:
    reason: str
    count: int
    owners: list[str]
    oldest_seconds: float


@attrs.frozen(kw_only=True)
class DlqGroup:
    consumer: str
    messages: int
    oldest_seconds: float
    reasons: list[ReasonGroup]
    reasons_read: int  # entries whose reason was read (all, unless the DLQ is huge)


def seconds(value: float | None) -> str:
    """An age or a wait as people say it: 3.2 s, 42 s, 7 min, 2.5 h.

    >>> seconds(None), seconds(3.24), seconds(42.4), seconds(420), seconds(9000)
    ('—', '3.2 s', '42 s', '7 min', '2.5 h')
    """
    if value is None:
        return "—"
    if value < 10:  # noqa: PLR2004 - one decimal while it matters
        return f"{value:.1f} s"
    if value < 2 * MINUTE:
        return f"{value:.0f} s"
    if value < 2 * HOUR:
        return f"{value / MINUTE:.0f} min"
    return f"{value / HOUR:.1f} h"


def rate(value: float) -> str:
    """A rate per second without trailing zeros.

    >>> rate(120.0), rate(0.05), rate(0.0)
    ('120', '0.05', '0')
    """
    return f"{value:.2f}".rstrip("0").rstrip(".")


def verdict(
    delivery: dict[str, Any],
    roles: list[dict[str, Any]],
    providers_down: Iterable[str] = (),
) -> Verdict:
    """The promise to a student enrolling now, kept or broken, in one sentence;
    `roles`: those alive, which say whether a stalled queue has a worker."""
    said = str(delivery["verdict"])
    eta, promise = delivery["eta_seconds"], delivery["promise_seconds"]
    arrival, service = delivery["arrival_per_s"], delivery["service_per_s"]
    if said == NEVER_DRAINS:
        headline = (
            f"Never drains: arrivals {rate(arrival)}/s ≥ service {rate(service)}/s; "
            f"the queue of {delivery['backlog']} only grows (promise "
            f"{seconds(promise)})"
        )
    else:
        waits = (
            f"a student enrolling now gets the e-mail in about {seconds(eta)} "
            f"(promise {seconds(promise)})"
        )
        headline = f"{said[:1].upper()}{said[1:]}: {waits}"
    measured = "measured" if delivery["service_measured"] else "assumed: none finished"
    drain = delivery["drain_seconds"]
    details = [
        f"{delivery['backlog']} e-mails queued, the oldest waiting "
        f"{seconds(delivery['oldest_age_seconds'])}.",
        f"{rate(arrival)}/s arriving, {rate(service)}/s served ({measured} over the "
        f"last {seconds(delivery['rate_window_seconds'])}); the queue drains "
        + ("never." if drain is None else f"in {seconds(drain)}."),
    ]
    fact = stalled_fact({"delivery": delivery, "roles": roles})
    if fact is not None:
        details.append(fact)
    details.extend(providers_down)
    return Verdict(on_time=said == ON_TIME, headline=headline, details=details)


def hop_rows(shown: dict[str, Any]) -> list[HopRow]:
    """Every hop of the chain in its order: outbox, consumers, saga, DLQ."""
    outbox = shown["outbox"]
    rows = [
        HopRow(
            key=OUTBOX_HOP,
            label="outbox (stored, not yet published)",
            count=outbox["unpublished"],
            oldest_seconds=outbox["oldest_age_seconds"],
            lag=_lag(outbox["unpublished"], outbox["oldest_age_seconds"]),
            detail=f"relay position {outbox['position']}",
        )
    ]
    for hop in shown["consumers"]:
        detail = consumer_detail(hop)
        rows.append(
            HopRow(
                key=hop["consumer"],
                label=f"{hop['kind']} {hop['consumer']}",
                count=hop["lag_events"],
                oldest_seconds=hop["lag_seconds"],
                lag=_lag(hop["lag_events"], hop["lag_seconds"]),
                detail=detail,
            )
        )
    deadlines = shown["saga_deadlines"]
    if deadlines is not None:
        rows.append(
            HopRow(
                key=DEADLINES_HOP,
                label="saga deadlines (overdue)",
                count=deadlines["overdue"],
                oldest_seconds=deadlines["oldest_overdue_seconds"],
                lag="",
                detail=f"{deadlines['scheduled']} scheduled",
            )
        )
    rows += [
        HopRow(
            key=dlq_hop(dead["consumer"]),
            label=f"DLQ {dead['consumer']}",
            count=dead["messages"],
            oldest_seconds=dead["oldest_age_seconds"],
            lag="",
            detail="waits for an operator: see the dead letters below",
        )
        for dead in shown["dlq"]
    ] or [
        HopRow(
            key=NO_DEAD_LETTERS,
            label="DLQ",
            count=0,
            oldest_seconds=None,
            lag="",
            detail="empty",
        )
    ]
    return rows


def role_rows(shown: dict[str, Any]) -> list[RoleRow]:
    """Each role with its live instances, one row each; a role with none, one row
    that says so."""
    rows = []
    for role, beats in roles_alive(shown).items():
        rows += [
            RoleRow(
                role=role,
                instance=beat["instance"],
                last_beat_seconds=beat["last_beat_s_ago"],
            )
            for beat in beats
        ] or [RoleRow(role=role, instance="", last_beat_seconds=None)]
    return rows


def hop_ages(rows: Iterable[HopRow]) -> dict[str, float | None]:
    return {row.key: row.oldest_seconds for row in rows}


def dlq_groups(
    shown: dict[str, Any], entries: list[DeadLetter], now: datetime | None = None
) -> list[DlqGroup]:
    """Each consumer's dead letters (counted by JetStream), grouped by reason (read
    from the entries, which may be fewer than all on a huge DLQ)."""
    now = now or datetime.now(UTC)
    by_consumer: dict[str, dict[str, list[DeadLetter]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for entry in entries:
        by_consumer[entry.consumer][entry.reason].append(entry)
    groups = []
    for hop in shown["dlq"]:
        reasons = by_consumer.get(hop["consumer"], {})
        groups.append(
            DlqGroup(
                consumer=hop["consumer"],
                messages=hop["messages"],
                oldest_seconds=hop["oldest_age_seconds"],
                reasons=sorted(
                    (
                        ReasonGroup(
                            reason=reason or "(no reason recorded)",
                            count=len(same),
                            owners=sorted({e.owner for e in same if e.owner}),
                            oldest_seconds=max(e.age_seconds(now) for e in same),
                        )
                        for reason, same in reasons.items()
                    ),
                    key=lambda g: (-g.count, g.reason),
                ),
                reasons_read=sum(len(same) for same in reasons.values()),
            )
        )
    return groups


def _lag(events: int, age: float | None) -> str:
    return f"{events} events, {seconds(age)}" if events else "none"
