"""The `club` command line (CONTRACT §3)."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any

from rich.console import Console
from rich.table import Table

from adapters.crash import check_crash_setting
from adapters.nats.streams import connect
from adapters.postgres.lease import RelayLease
from entrypoints import bootstrap
from entrypoints.settings import ConfigError, Settings


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        check_crash_setting()
        settings = Settings.from_env()
        return int(args.run(settings, args) or 0)
    except (ConfigError, ValueError) as e:
        print(f"club: {e}", file=sys.stderr)
        return 2


def _up(settings: Settings, _: argparse.Namespace) -> int:
    from entrypoints.supervisor import up

    return up(settings)


def _migrate(settings: Settings, _: argparse.Namespace) -> int:
    database_url, nats_url = settings.require_services()
    bootstrap.migrate_database(database_url)

    async def broker() -> None:
        nc = await connect(nats_url, name="club-migrate")
        try:
            await bootstrap.migrate_broker(nc.jetstream())
        finally:
            await nc.close()

    asyncio.run(broker())
    print("club: database and streams are up to date")
    return 0


def _api(settings: Settings, _: argparse.Namespace) -> int:
    from entrypoints.roles import run_api

    run_api(settings)
    return 0


def _relay(settings: Settings, _: argparse.Namespace) -> int:
    from entrypoints.roles import run_relay

    run_relay(settings)
    return 0


def _relay_rewind(settings: Settings, args: argparse.Namespace) -> int:
    database_url, _ = settings.require_services()
    container = bootstrap.build(database_url, pool_size=1)
    try:
        newest = container.app.recorder.max_notification_id() or 0
        if not 0 <= args.to <= newest:
            print(
                f"club: --to must be from 0 to {newest}, the newest notification id",
                file=sys.stderr,
            )
            return 2
        lease = RelayLease(container.engine, name="default", owner="cli", ttl=1)
        before = lease.position()
        lease.rewind(args.to)
    finally:
        container.close()
    print(
        f"club: relay position moved from {before} to {args.to}; the running relay "
        "was fenced and republishes from there. Consumers skip what they already have."
    )
    return 0


def _audit(settings: Settings, _: argparse.Namespace) -> int:
    from entrypoints.audit import find_holes

    database_url, nats_url = settings.require_services()
    container = bootstrap.build(database_url, pool_size=1)

    async def holes() -> list[Any]:
        nc = await connect(nats_url, name="club-audit")
        try:
            return await find_holes(container, nc.jetstream())
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
    Console().print(table)
    if found:
        print(
            "club: the broker lost these before they were consumed; republish with "
            f"`club relay rewind --to {min(h.notification_id for h in found) - 1}`"
        )
    return 1 if found else 0


def _projector(settings: Settings, args: argparse.Namespace) -> int:
    from entrypoints.roles import run_projector

    run_projector(settings, args.name)
    return 0


def _rebuild(settings: Settings, args: argparse.Namespace) -> int:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    from adapters.postgres.rebuild import Rebuild

    database_url, _ = settings.require_services()
    container = bootstrap.build(database_url, pool_size=2)
    metadata, apply = bootstrap.PROJECTIONS[args.name]
    rebuild = Rebuild(
        engine=container.engine,
        recorder=container.app.recorder,
        mapper=container.app.mapper,
        name=args.name,
        metadata=metadata,
        apply=apply,
    )
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
    finally:
        container.close()
    print(
        f"club: {args.name} rebuilt from the event store: {report.events} events in "
        f"{report.seconds:.1f}s ({report.rate:,.0f} events/s); now serving"
    )
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="club", description=__doc__)
    sub = parser.add_subparsers(required=True, metavar="COMMAND")
    sub.add_parser("up", help="every role in one supervised process tree").set_defaults(
        run=_up
    )
    sub.add_parser("migrate", help="tables, streams and consumers").set_defaults(
        run=_migrate
    )
    sub.add_parser("api", help="the HTTP API").set_defaults(run=_api)
    relay = sub.add_parser("relay", help="outbox -> JetStream")
    relay.set_defaults(run=_relay)
    relay_sub = relay.add_subparsers(required=False, metavar="ACTION")
    rewind = relay_sub.add_parser("rewind", help="republish from a notification id")
    rewind.add_argument("--to", type=int, required=True, metavar="N")
    rewind.set_defaults(run=_relay_rewind)
    sub.add_parser(
        "audit", help="events up to the relay position that a consumer never saw"
    ).set_defaults(run=_audit)
    projector = sub.add_parser("projector", help="one read-model projection")
    projector.add_argument("name", choices=sorted(bootstrap.PROJECTIONS))
    projector.set_defaults(run=_projector)
    projections = sub.add_parser("projections", help="read-model maintenance")
    projections_sub = projections.add_subparsers(required=True, metavar="ACTION")
    rebuild = projections_sub.add_parser(
        "rebuild", help="rebuild from the start of the event store, then switch"
    )
    rebuild.add_argument("name", choices=sorted(bootstrap.PROJECTIONS))
    rebuild.set_defaults(run=_rebuild)
    return parser


if __name__ == "__main__":
    sys.exit(main())
