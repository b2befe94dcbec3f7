"""Maintenance commands: audit the chain, rewind the relay, rebuild a read model."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from adapters.nats.streams import connect
from adapters.postgres.lease import RELAY_LEASE, RelayLease
from adapters.postgres.rebuild import RebuildSwitchError
from entrypoints.config.settings import Settings
from entrypoints.ops.audit import find_holes
from entrypoints.ops.terminal import OperatorConsole
from entrypoints.runtime import bootstrap


def relay_rewind(settings: Settings, args: argparse.Namespace) -> int:
    database_url, _ = settings.operator_services()
    container = bootstrap.build(database_url, pool_size=1)
    try:
        newest = container.app.recorder.max_notification_id() or 0
        if not 1 <= args.to <= newest:
            print(
                f"club: --to must be from 1 to {newest}, the newest notification id",
                file=sys.stderr,
            )
            return 2
        lease = RelayLease(container.engine, name=RELAY_LEASE, owner="cli", ttl=1)
        before = lease.position()
        # The position is the last id published, so N itself is published again.
        lease.rewind(args.to - 1)
    finally:
        container.close()
    print(
        f"club: relay position moved from {before} to {args.to - 1}; the running relay "
        f"was fenced and republishes from notification {args.to} on. Consumers skip "
        "what they already have."
    )
    return 0


def audit(settings: Settings, _: argparse.Namespace) -> int:
    database_url, nats_url = settings.operator_services()
    container = bootstrap.build(database_url, pool_size=1)

    async def holes() -> list[Any]:
        nc = await connect(nats_url, name="club-audit")
        try:
            return await find_holes(bootstrap.console_reads(container, nc.jetstream()))
        finally:
            await nc.close()

    try:
        found = asyncio.run(holes())
    finally:
        container.close()
    table = Table(title=f"Events the consumers never saw: {len(found)}")
    for column in ("consumer", "notification id", "event id", "type"):
        table.add_column(column)
    for hole in found:
        table.add_row(
            hole.consumer, str(hole.notification_id), hole.event_id, hole.type
        )
    OperatorConsole().print(table)
    if found:
        print(
            "club: the broker lost these before they were consumed; republish with "
            f"`club relay rewind --to {min(h.notification_id for h in found)}`"
        )
    return 1 if found else 0


def rebuild(settings: Settings, args: argparse.Namespace) -> int:
    database_url, _ = settings.operator_services()
    container = bootstrap.build(database_url, pool_size=2)
    rebuild = bootstrap.build_rebuild(container, args.name)
    columns = (
        TextColumn(f"rebuilding {args.name}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("notifications"),
        TextColumn("{task.fields[rate]:,.0f} events/s"),
        TimeRemainingColumn(),
    )
    try:
        with Progress(*columns) as bar:
            task = bar.add_task("rebuild", total=None, rate=0.0)
            started = time.perf_counter()

            def progress(done: int, total: int) -> None:
                rate = rebuild.events_applied / (time.perf_counter() - started)
                bar.update(task, completed=done, total=total, rate=rate)

            report = rebuild.run(progress)
    except RebuildSwitchError as e:
        print(f"club: {e}", file=sys.stderr)
        return 1
    finally:
        container.close()
    print(
        f"club: {args.name} rebuilt from the event store: {report.events} events in "
        f"{report.seconds:.1f}s ({report.rate:,.0f} events/s); now serving"
    )
    for skipped in report.skipped:  # also in the table rebuild_skips
        print(
            f"club: skipped notification {skipped.notification_id} "
            f"(event {skipped.event_id}): {skipped.reason}"
        )
    return 0
