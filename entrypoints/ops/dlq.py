"""`club dlq list` and `club dlq replay`: the dead-letter queue as people run it."""

from __future__ import annotations

import argparse
import asyncio
import functools
import getpass
import json
import signal
import sys
from collections.abc import Callable
from datetime import UTC, datetime

from nats.js import JetStreamContext
from rich.console import Console
from rich.table import Table

from adapters.nats.streams import connect
from application.console_reads import (
    DeadLetter,
    NotReplayableError,
    ReplayReport,
    ReplayRequest,
    check_consumer,
)
from application.ports import DeadLetterQueue
from entrypoints.config.container import Container
from entrypoints.config.settings import ConfigError, Settings
from entrypoints.ops.operator_command import OpenContainer
from entrypoints.ops.terminal import OperatorConsole

# The DLQ over a JetStream context; with a container, replays are audited in it.
DeadLetterQueueOf = Callable[[JetStreamContext, Container | None], DeadLetterQueue]


def add_commands(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    open_container: OpenContainer,
    queue_of: DeadLetterQueueOf,
) -> None:
    dlq = sub.add_parser("dlq", help="dead letters: list them, replay them")
    actions = dlq.add_subparsers(required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="every entry, oldest first")
    listing.add_argument("--consumer", metavar="C", help="only this consumer's")
    listing.add_argument("--json", action="store_true", help="one JSON object a line")
    listing.set_defaults(run=functools.partial(list_command, queue_of=queue_of))
    again = actions.add_parser(
        "replay", help="hand entries back to the one consumer that failed them"
    )
    again.add_argument("--consumer", metavar="C", required=True)
    again.add_argument(
        "--batch", type=int, default=100, metavar="N", help="at most N entries"
    )
    again.add_argument(
        "--rate", type=float, default=10.0, metavar="PER_S", help="entries a second"
    )
    again.add_argument("--dry-run", action="store_true", help="show, hand nothing back")
    again.add_argument(
        "--reason", default="", metavar="TEXT", help="why (kept in the audit record)"
    )
    again.set_defaults(
        run=functools.partial(replay_command, open=open_container, queue_of=queue_of)
    )


def list_command(
    settings: Settings, args: argparse.Namespace, *, queue_of: DeadLetterQueueOf
) -> int:
    _, nats_url = settings.operator_services()
    if args.consumer is not None:
        try:
            check_consumer(args.consumer)
        except ValueError as e:
            raise ConfigError(str(e)) from None
    entries = asyncio.run(_collect(nats_url, args.consumer, queue_of))
    if args.json:
        for entry in entries:
            sys.stdout.write(json.dumps(_as_json(entry)) + "\n")
        return 0
    console = OperatorConsole()
    if not entries:
        console.print("The dead-letter queue is empty.")
        return 0
    console.print(_table(entries, f"{len(entries)} dead letters"))
    return 0


def replay_command(
    settings: Settings,
    args: argparse.Namespace,
    *,
    open: OpenContainer,
    queue_of: DeadLetterQueueOf,
) -> int:
    database_url, nats_url = settings.operator_services()
    reason = args.reason or ("dry run" if args.dry_run else "")
    try:
        request = ReplayRequest(
            consumer=args.consumer,
            operator=getpass.getuser(),
            reason=reason,
            batch=args.batch,
            rate_per_s=args.rate,
            dry_run=args.dry_run,
        )
    except ValueError as e:
        raise ConfigError(str(e)) from None
    console = OperatorConsole()
    container = open(database_url)
    try:
        report = asyncio.run(_replay(container, queue_of, nats_url, request, console))
    except NotReplayableError as e:
        raise ConfigError(str(e)) from None
    finally:
        container.close()
    verb = "would hand back" if request.dry_run else "handed back"
    count = len(report.matched) if request.dry_run else report.replayed
    console.print(
        f"{verb} {count} of {args.consumer}'s dead letters ({report.outcome}); "
        f"audit record {report.replay_id}"
    )
    if request.dry_run and report.matched:
        console.print(_table(report.matched, "would be handed back"))
    return 0 if report.outcome in ("finished", "stopped") else 1


async def _collect(
    nats_url: str, consumer: str | None, queue_of: DeadLetterQueueOf
) -> list[DeadLetter]:
    nc = await connect(nats_url, name="club-dlq")
    try:
        return await queue_of(nc.jetstream(), None).entries(consumer)
    finally:
        await nc.close()


async def _replay(
    container: Container,
    queue_of: DeadLetterQueueOf,
    nats_url: str,
    request: ReplayRequest,
    console: Console,
) -> ReplayReport:
    """Ctrl-C (or SIGTERM) stops after the entry in hand; the next run resumes."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    nc = await connect(nats_url, name="club-dlq-replay")
    try:
        return await queue_of(nc.jetstream(), container).replay(
            request,
            stop=stop,
            progress=lambda e: console.print(
                f"handed back DLQ #{e.dlq_seq} {e.event_id}"
            ),
        )
    finally:
        await nc.close()


def _table(entries: list[DeadLetter], title: str) -> Table:
    now = datetime.now(UTC)
    table = Table(title=title)
    for column in (
        "#",
        "consumer",
        "event",
        "subject",
        "reason",
        "tries",
        "owner",
        "first failed",
        "age",
    ):
        table.add_column(column)
    for e in entries:
        table.add_row(
            str(e.dlq_seq),
            e.consumer,
            e.event_id,
            e.original_subject,
            e.reason,
            "" if e.deliveries is None else str(e.deliveries),
            e.owner,
            _ago(e.first_failed_at, now),
            f"{e.age_seconds(now):.0f} s",
        )
    return table


def _ago(moment: datetime | None, now: datetime) -> str:
    """How long ago; an entry from before first failures were recorded has none."""
    if moment is None:
        return "not recorded"
    return f"{(now - moment).total_seconds():.0f} s ago"


def _as_json(entry: DeadLetter) -> dict[str, object]:
    return {
        "dlq_seq": entry.dlq_seq,
        "consumer": entry.consumer,
        "event_id": entry.event_id,
        "original_subject": entry.original_subject,
        "original_seq": entry.original_seq,
        "reason": entry.reason,
        "owner": entry.owner,
        "deliveries": entry.deliveries,
        "first_failed_at": None
        if entry.first_failed_at is None
        else entry.first_failed_at.isoformat(),
        "last_failed_at": entry.last_failed_at.isoformat(),
    }
