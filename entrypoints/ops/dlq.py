"""`club dlq list|replay|discard`: the dead-letter queue as people run it."""

from __future__ import annotations

import argparse
import asyncio
import functools
import getpass
import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime

from nats.js import JetStreamContext
from rich.console import Console
from rich.table import Table

from adapters.nats.streams import connect
from adapters.stop_signals import stop_on_signals
from application import retention
from application.console_reads import (
    DeadLetter,
    DiscardReport,
    DiscardRequest,
    DlqFilter,
    NotReplayableError,
    ReplayReport,
    ReplayRequest,
    check_consumer,
)
from application.ports import DeadLetterQueue
from entrypoints.config.container import Container
from entrypoints.config.settings import KEY_LIFETIME, ConfigError, Settings
from entrypoints.ops.operator_command import OpenContainer
from entrypoints.ops.terminal import OperatorConsole

# The DLQ over a JetStream context; with a container, replays are audited in it.
DeadLetterQueueOf = Callable[[JetStreamContext, Container | None], DeadLetterQueue]


def add_commands(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    open_container: OpenContainer,
    queue_of: DeadLetterQueueOf,
) -> None:
    dlq = sub.add_parser(
        "dlq", help="dead letters: list them, replay them, discard them"
    )
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
    _add_filters(again)
    again.add_argument(
        "--past-key-lifetime",
        action="store_true",
        help=f"send the --id entries held back past {KEY_LIFETIME} anyway",
    )
    again.set_defaults(
        run=functools.partial(replay_command, open=open_container, queue_of=queue_of)
    )
    drop = actions.add_parser(
        "discard", help="remove entries from the DLQ without handing them back"
    )
    drop.add_argument("--consumer", metavar="C", required=True)
    _add_filters(drop)
    drop.add_argument(
        "--all", action="store_true", help="every one of the consumer's entries"
    )
    drop.add_argument(
        "--reason", default="", metavar="TEXT", help="why (required; audited)"
    )
    drop.add_argument("--dry-run", action="store_true", help="show, discard nothing")
    drop.set_defaults(
        run=functools.partial(discard_command, open=open_container, queue_of=queue_of)
    )


def _add_filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--because",
        default="",
        metavar="SUBSTRING",
        help="only entries whose recorded reason contains it (any case)",
    )
    parser.add_argument(
        "--type",
        default="",
        metavar="EventName",
        help="only entries of this event type (from the original subject)",
    )
    parser.add_argument(
        "--id",
        action="append",
        default=[],
        metavar="EVENT_ID",
        dest="ids",
        help="only this event's entry (repeat for more)",
    )


def _filter(args: argparse.Namespace) -> DlqFilter:
    if args.type and not args.type.isidentifier():
        msg = (
            f"--type names one event type, like EnrollmentConfirmed, not"
            f" {args.type!r} (see `club dlq list` for the entries' subjects)"
        )
        raise ConfigError(msg)
    ids = [i.strip() for i in args.ids]
    if any(not i for i in ids):
        raise ConfigError("--id takes an event id (see `club dlq list`), not ''")
    return DlqFilter(
        because=args.because.strip(), event_type=args.type, event_ids=frozenset(ids)
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
    reason = args.reason or ("dry run" if args.dry_run else "")
    try:
        request = ReplayRequest(
            consumer=args.consumer,
            operator=getpass.getuser(),
            reason=reason,
            batch=args.batch,
            rate_per_s=args.rate,
            dry_run=args.dry_run,
            only=_filter(args),
            key_lifetime_s=settings.email_key_lifetime_s,
            past_key_lifetime=args.past_key_lifetime,
        )
    except ValueError as e:
        raise ConfigError(str(e)) from None
    database_url, nats_url = settings.operator_services()
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
    if report.held_back:
        _say_held_back(console, request, report.held_back)
    return 0 if report.outcome in ("finished", "stopped") else 1


def _say_held_back(
    console: OperatorConsole, request: ReplayRequest, held: list[DeadLetter]
) -> None:
    """How many, why, and what the operator can do about them."""
    lifetime = retention.shown(request.key_lifetime_s)
    consumer = request.consumer
    console.print(
        f"held back {len(held)} of {consumer}'s dead letters: they first failed"
        f" more than {lifetime} ago ({KEY_LIFETIME}), and the e-mail provider"
        " forgets an idempotency key after that, so sending again could send"
        " twice."
    )
    console.print(_table(held, "held back"))
    console.print(
        "Check each on the provider's dashboard; then, to send one anyway:"
        f" club dlq replay --consumer {consumer} --id EVENT_ID --past-key-lifetime"
        f" --reason TEXT; or drop it: club dlq discard --consumer {consumer}"
        " --id EVENT_ID --reason TEXT"
    )


def discard_command(
    settings: Settings,
    args: argparse.Namespace,
    *,
    open: OpenContainer,
    queue_of: DeadLetterQueueOf,
) -> int:
    try:
        request = DiscardRequest(
            consumer=args.consumer,
            operator=getpass.getuser(),
            reason=args.reason,
            only=_filter(args),
            everything=args.all,
            dry_run=args.dry_run,
        )
    except ValueError as e:
        raise ConfigError(str(e)) from None
    database_url, nats_url = settings.operator_services()
    console = OperatorConsole()
    container = open(database_url)
    try:
        report = asyncio.run(_discard(container, queue_of, nats_url, request))
    finally:
        container.close()
    verb = "would discard" if request.dry_run else "discarded"
    count = len(report.matched) if request.dry_run else report.discarded
    console.print(
        f"{verb} {count} of {args.consumer}'s dead letters; audit record"
        f" {report.discard_id}"
    )
    if report.matched:
        title = "would be discarded" if request.dry_run else "discarded"
        console.print(_table(report.matched, title))
    return 0


async def _discard(
    container: Container,
    queue_of: DeadLetterQueueOf,
    nats_url: str,
    request: DiscardRequest,
) -> DiscardReport:
    nc = await connect(nats_url, name="club-dlq-discard")
    try:
        return await queue_of(nc.jetstream(), container).discard(request)
    finally:
        await nc.close()


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
    with stop_on_signals() as stop:
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
