"""One view of the chain, hop by hop, and the delivery time against the promise.

Read from PostgreSQL (outbox, notification states, measured rates, sizes) and from
JetStream (each durable's lag, the DLQ, stream sizes); `club status`, `/ops/status`
and `/metrics` all read through here, so they cannot disagree.
"""

from __future__ import annotations

import asyncio
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs

from adapters.nats.streams import DLQ_STREAM, EVENTS_STREAM, REPLAY_STREAM
from application.capacity import plan, verdict
from application.console_reads import (
    ALIVE_WITHIN_S,
    RATE_WINDOW_S,
    ConsumerHop,
    DeadlinesHop,
    DlqHop,
    ExportFilesTally,
    OutboxHop,
    Rates,
    RoleBeat,
    StateCount,
    StreamSize,
)
from application.ports import ChainCounts, ConsoleReads
from application.provider_circuit import CircuitView
from application.retention import Retention
from application.work_lists import WorkTally
from entrypoints.config.catalogue import (
    NOTIFICATIONS,
    PROJECTIONS,
    ROLES,
    WORK_CLASSES,
)
from entrypoints.ops.provider_status import providers_json


@attrs.frozen(kw_only=True)
class Delivery:
    """The capacity model fed with measured rates, for the notification queue."""

    queue: str
    backlog: int
    oldest_age_seconds: float
    arrival_per_s: float
    service_per_s: float
    service_measured: bool  # False: nothing finished in the window; configured rate
    drains: bool
    drain_seconds: float
    eta_seconds: float
    promise_seconds: float

    @property
    def verdict(self) -> str:
        return verdict(
            eta_seconds=self.eta_seconds,
            promise_seconds=self.promise_seconds,
            drains=self.drains,
        )

    @property
    def stalled(self) -> bool:
        """Work waits and nothing finished in the window: is a worker running?"""
        return self.backlog > 0 and not self.service_measured


@attrs.frozen(kw_only=True)
class Retained:
    """What retention bounds, beside what it is configured to keep."""

    oldest_age_seconds: dict[str, float | None]  # per table retention trims
    horizons: dict[str, datetime]  # per consumer: its inbox trimmed up to here
    export_files: ExportFilesTally | None  # None: no exports directory given
    retention: Retention | None  # None: the caller did not say

    def retention_seconds(self) -> dict[str, float]:
        """Each store's retention, by the names `stores` shows them under."""
        kept = self.retention
        if kept is None:
            return {}
        return {
            "inbox": kept.inbox_s,
            "request_answers": kept.answers_s,
            EVENTS_STREAM: kept.stream_s,
            DLQ_STREAM: kept.dead_letters_s,
            REPLAY_STREAM: kept.dead_letters_s,
            "export_files": kept.exports_s,
        }


@attrs.frozen(kw_only=True)
class ChainStatus:
    at: datetime
    outbox: OutboxHop
    consumers: list[ConsumerHop]
    positions: dict[str, int]
    notification_states: list[StateCount]
    saga_deadlines: DeadlinesHop | None
    dlq: list[DlqHop]
    rates: Rates
    delivery: Delivery
    stores: dict[str, int]
    streams: list[StreamSize]
    retained: Retained | None = None  # None: not read (a /metrics scrape)
    roles: list[RoleBeat] = attrs.Factory(list)  # those that beat in the window
    work: list[WorkTally] = attrs.Factory(list)  # a person's work, by state
    providers: list[CircuitView] = attrs.Factory(list)  # each provider's circuit

    def consumer(self, name: str) -> ConsumerHop | None:
        return next((c for c in self.consumers if c.consumer == name), None)


async def read_chain(
    reads: ConsoleReads,
    *,
    promise_seconds: float,
    configured_service_per_s: float,
    detail: bool = True,
    rate_window_seconds: float = RATE_WINDOW_S,
    retention: Retention | None = None,
    exports_dir: Path | None = None,
) -> ChainStatus:
    """`detail=False` (a /metrics scrape) skips what no gauge shows and a large
    table makes slow: notification states, store sizes and ages. `retention` and
    `exports_dir` (from the settings) add each store's retention and the export
    files beside the sizes."""
    database = reads.chain_counts
    durables = [*PROJECTIONS, *WORK_CLASSES]
    consumers = await reads.chain_lags.consumer_hops(durables)
    dlq = await reads.chain_lags.dlq_hops()
    streams = await reads.chain_lags.stream_sizes()
    (
        outbox,
        states,
        rates,
        stores,
        positions,
        deadlines,
        roles,
        work,
    ) = await asyncio.to_thread(
        lambda: (
            database.outbox(),
            database.notification_states() if detail else [],
            database.rates(rate_window_seconds),
            database.store_sizes() if detail else {},
            database.projection_positions(),
            database.saga_deadlines(),
            database.roles_alive(ALIVE_WITHIN_S),
            reads.work_lists.tallies(),
        )
    )
    retained = None
    if detail:
        retained = await asyncio.to_thread(_retained, reads, retention, exports_dir)
    queue = next(c for c in consumers if c.consumer == NOTIFICATIONS)
    circuits = reads.circuits
    providers = [] if circuits is None else await asyncio.to_thread(circuits.circuits)
    return ChainStatus(
        at=datetime.now(UTC),
        outbox=outbox,
        consumers=consumers,
        positions={name: positions.get(name, 0) for name in PROJECTIONS},
        notification_states=states,
        saga_deadlines=deadlines,
        dlq=dlq,
        rates=rates,
        delivery=_delivery(queue, rates, promise_seconds, configured_service_per_s),
        stores=stores,
        streams=streams,
        retained=retained,
        roles=roles,
        work=work,
        providers=providers,
    )


OUTBOX_HOP = "outbox"
DEADLINES_HOP = "saga-deadlines"
NO_DEAD_LETTERS = "dlq"


def dlq_hop(consumer: str) -> str:
    return f"dlq:{consumer}"


async def read_hop_ages(reads: ConsoleReads) -> dict[str, float | None]:
    """Each hop's oldest age, and nothing else: what the /ops page's history
    keeps. Its sampler runs inside the API every few seconds: the whole-chain
    read's rates, tallies and role beats beside the requests doubled the API's
    p99 at three quarters of its capacity (docs/benchmarks.md), and the outbox's
    count would read every unpublished row, a million after an hour without a
    relay, where its oldest age is two index lookups."""
    consumers = await reads.chain_lags.consumer_hops([*PROJECTIONS, *WORK_CLASSES])
    dlq = await reads.chain_lags.dlq_hops()
    database = reads.chain_counts
    outbox_age, deadlines = await asyncio.to_thread(
        lambda: (database.outbox_age(), database.saga_deadlines())
    )
    ages: dict[str, float | None] = {OUTBOX_HOP: outbox_age}
    ages |= {hop.consumer: hop.oldest_age_seconds for hop in consumers}
    if deadlines is not None:
        ages[DEADLINES_HOP] = deadlines.oldest_overdue_seconds
    for hop in dlq:
        ages[dlq_hop(hop.consumer)] = hop.oldest_age_seconds
    if not dlq:
        ages[NO_DEAD_LETTERS] = None
    return ages


def _retained(
    reads: ConsoleReads, retention: Retention | None, exports_dir: Path | None
) -> Retained:
    database: ChainCounts = reads.chain_counts
    return Retained(
        oldest_age_seconds=database.store_ages(),
        horizons=database.inbox_horizons(),
        export_files=None if exports_dir is None else reads.export_files(exports_dir),
        retention=retention,
    )


def _delivery(
    queue: ConsumerHop, rates: Rates, promise_seconds: float, configured: float
) -> Delivery:
    """The measured service rate is the throughput: while the queue keeps up it
    equals the arrival rate, so A >= S says "never drains" only while work waits
    (then the workers are busy and the throughput is their capacity). Nothing
    finished in the window with work waiting: the configured rate is assumed, and
    the queue is reported stalled."""
    measured = rates.service_per_s > 0
    backlog = queue.lag_events
    model = plan(
        backlog=backlog,
        arrival_rate=rates.arrival_per_s,
        service_rate=rates.service_per_s if measured else configured,
    )
    oldest = queue.oldest_age_seconds or 0.0
    # The student enrolling now waits for the backlog ahead; the oldest one has
    # already waited its age. Either past the promise means a promise broken.
    eta = max(model.last_queued_wait_seconds, oldest)
    keeping_up = backlog == 0
    return Delivery(
        queue=NOTIFICATIONS,
        backlog=backlog,
        oldest_age_seconds=oldest,
        arrival_per_s=model.arrival_rate,
        service_per_s=model.service_rate,
        service_measured=measured,
        drains=keeping_up or model.drains,
        drain_seconds=0.0 if keeping_up else model.drain_seconds,
        eta_seconds=eta,
        promise_seconds=promise_seconds,
    )


def as_json(status: ChainStatus) -> dict[str, Any]:
    """Plain JSON: infinities become null (JSON has none), ages are seconds."""
    delivery = status.delivery
    return {
        "at": status.at.isoformat(),
        "outbox": _plain(attrs.asdict(status.outbox)),
        "consumers": [
            _plain(
                attrs.asdict(c)
                | {
                    "kind": "projection" if c.consumer in PROJECTIONS else "work class",
                    "lag_events": c.lag_events,
                    "lag_seconds": c.oldest_age_seconds,
                    "position": status.positions.get(c.consumer),
                }
            )
            for c in status.consumers
        ],
        "work_classes": {name: _work_class(status, name) for name in WORK_CLASSES},
        "providers": providers_json(
            status.providers, {c.consumer: c.lag_events for c in status.consumers}
        ),
        "saga_deadlines": None
        if status.saga_deadlines is None
        else _plain(attrs.asdict(status.saga_deadlines)),
        "dlq": [_plain(attrs.asdict(hop)) for hop in status.dlq],
        "delivery": _plain(
            attrs.asdict(delivery)
            | {
                "verdict": delivery.verdict,
                "stalled": delivery.stalled,
                "rate_window_seconds": status.rates.window_seconds,
            }
        ),
        "roles": [
            {
                "kind": beat.kind,
                "name": beat.name,
                "instance": beat.instance,
                "last_beat_s_ago": beat.last_beat_seconds_ago,
            }
            for beat in status.roles
        ],
        "work": [
            {
                "kind": tally.kind,
                "state": tally.state,
                "said": tally.said,
                "count": tally.count,
                "oldest_age_seconds": tally.oldest_age_seconds(status.at),
            }
            for tally in status.work
        ],
        "stores": {
            "rows": status.stores,
            "streams": {
                s.stream: {"messages": s.messages, "bytes": s.bytes}
                for s in status.streams
            },
            **_retained_json(status.retained),
        },
    }


def _retained_json(retained: Retained | None) -> dict[str, Any]:
    """Beside the sizes: the oldest row's age, each store's retention, the export
    files and each consumer's trimmed horizon (empty when not read)."""
    if retained is None:
        return {}
    files = retained.export_files
    return {
        "oldest_age_seconds": retained.oldest_age_seconds,
        "retention_seconds": retained.retention_seconds(),
        "export_files": None if files is None else attrs.asdict(files),
        "inbox_horizons": {
            consumer: when.isoformat() for consumer, when in retained.horizons.items()
        },
    }


def _work_class(status: ChainStatus, name: str) -> dict[str, Any]:
    hop = status.consumer(name)
    shown: dict[str, Any] = {
        "queued": hop.lag_events if hop else 0,
        "oldest_age_seconds": hop.oldest_age_seconds if hop else None,
    }
    if name == NOTIFICATIONS:
        shown["states"] = [_plain(attrs.asdict(s)) for s in status.notification_states]
    return shown


def _plain(values: dict[str, Any]) -> dict[str, Any]:
    return {
        k: None if isinstance(v, float) and not math.isfinite(v) else v
        for k, v in values.items()
    }


def consumer_detail(hop: dict[str, Any]) -> str:
    """A durable's row in words, from its `as_json` entry (the table and the page)."""
    if not hop["exists"]:
        return "no durable (run `club migrate`)"
    detail = (
        f"{hop['num_pending']} pending, {hop['num_ack_pending']} in hand, "
        f"{hop['redelivered']} redelivered"
    )
    if hop["position"] is not None:
        detail += f", position {hop['position']}"
    return detail


def role_label(kind: str, name: str) -> str:
    """A role as `club` names it: `worker notifications`, `relay`."""
    return f"{kind} {name}" if name else kind


def roles_alive(shown: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Every role `club up` runs (the sandboxes aside), each with the instances
    that beat in the window (none: not running), then any other that beats."""
    alive: dict[str, list[dict[str, Any]]] = {
        role_label(role.kind, role.name): [] for role in ROLES if role.kind != "sandbox"
    }
    for beat in shown["roles"]:
        alive.setdefault(role_label(beat["kind"], beat["name"]), []).append(beat)
    return alive


def stalled_fact(shown: dict[str, Any]) -> str | None:
    """Work waits and nothing finished: whether a notifications worker runs, as
    its heartbeat says (None: the queue is not stalled)."""
    if not shown["delivery"]["stalled"]:
        return None
    label = role_label("worker", NOTIFICATIONS)
    workers = len(roles_alive(shown)[label])
    if not workers:
        return (
            f"Nothing finished while work waits: no {NOTIFICATIONS} worker has "
            f"beaten in the last {ALIVE_WITHIN_S:.0f} s: none is running "
            f"(`club {label}`)."
        )
    return (
        f"Nothing finished while work waits, yet {workers} {NOTIFICATIONS} "
        f"worker{'' if workers == 1 else 's'} beat: stuck on the e-mail provider "
        "or the database (its log, `club dlq list`)?"
    )
