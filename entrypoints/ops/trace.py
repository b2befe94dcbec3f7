"""`club trace ID`: one enrollment, purchase or export through the whole chain.

Every step so far — the event store, the relay, the stream, each consumer, the
provider, the saga, the DLQ — with its time and where it is recorded, then who owns
the next step and where that obligation is written down. Rich tables by default,
`--json` for machines (the same document as `GET /ops/trace/{id}`).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import sys
from typing import Any
from uuid import UUID

from rich.console import Group
from rich.table import Table
from rich.text import Text

from entrypoints.config.container import Container
from entrypoints.config.settings import Settings
from entrypoints.ops.operator_command import (
    OpenContainer,
    ReadsOf,
    Unanswered,
    connect_within_budget,
    read_once,
)
from entrypoints.ops.terminal import OperatorConsole, visible
from entrypoints.ops.trace_collect import as_json, collect


def add_commands(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    open_container: OpenContainer,
    reads_of: ReadsOf,
) -> None:
    trace = sub.add_parser(
        "trace",
        help="an enrollment, purchase or export: every step, and who owns the next",
    )
    trace.add_argument(
        "id",
        type=trace_id,
        metavar="ID",
        help="the enrollment id, purchase id or export operation id (a UUID)",
    )
    trace.add_argument("--json", action="store_true", help="one JSON document")
    trace.set_defaults(
        run=functools.partial(trace_command, open=open_container, reads_of=reads_of)
    )


def trace_id(raw: str) -> UUID:
    try:
        return UUID(raw.strip())
    except ValueError:
        msg = (
            f"{raw!r} is not an id: give the enrollment_id, purchase_id or "
            "operation_id the API answered with, a UUID such as "
            "3f2b6c1e-8d4a-4e0b-9c57-1a2b3c4d5e6f"
        )
        raise argparse.ArgumentTypeError(msg) from None


def trace_command(
    settings: Settings,
    args: argparse.Namespace,
    *,
    open: OpenContainer,
    reads_of: ReadsOf,
) -> int:
    database_url, nats_url = settings.operator_services()
    shown = read_once(
        "trace",
        open,
        database_url,
        lambda c: asyncio.run(_read(c, reads_of, nats_url, args.id)),
    )
    if isinstance(shown, Unanswered):
        return 1
    if shown is None:
        sys.stderr.write(
            f"club trace: nothing is stored under {args.id}: no enrollment, "
            "purchase or export has this id (check it was copied whole)\n"
        )
        return 1
    if args.json:
        sys.stdout.write(json.dumps(shown) + "\n")
    else:
        OperatorConsole().print(render(shown))
    return 0


async def _read(
    container: Container, reads_of: ReadsOf, nats_url: str, id_: UUID
) -> dict[str, Any] | None:
    nc = await connect_within_budget(nats_url, "club-trace")
    try:
        trace = await collect(container.app, reads_of(container, nc.jetstream()), id_)
    finally:
        await nc.close()
    return None if trace is None else as_json(trace)


def render(shown: dict[str, Any]) -> Group:
    parts: list[Any] = [Text(f"{shown['kind']} {shown['id']}", style="bold")]
    for event in shown["events"]:
        parts.append(_event_table(event))
    if shown["saga"] is not None:
        parts.append(_saga(shown["saga"]))
    if shown["export"] is not None:
        export = shown["export"]
        parts.append(
            Text(
                visible(
                    f"export: {export['status']}, attempts {export['attempts']}"
                    + (f", error: {export['error']}" if export["error"] else "")
                )
            )
        )
    parts.append(_next(shown["next_steps"]))
    return Group(*parts)


def _event_table(event: dict[str, Any]) -> Table:
    title = f"v{event['version']} {event['type']}"
    if event["event_id"]:
        title += f"  (event {event['event_id']})"
    table = Table(title=title, title_justify="left")
    for column in ("hop", "state", "at", "recorded in"):
        table.add_column(column)
    for hop in event["hops"]:
        table.add_row(hop["hop"], hop["state"], _at(hop["at"]), hop["recorded_in"])
    return table


def _saga(saga: dict[str, Any]) -> Table:
    table = Table(title="saga", title_justify="left")
    table.add_column("field")
    table.add_column("value")
    for key in (
        "status",
        "next_step",
        "payment_id",
        "payment_open",
        "refund_state",
        "due_at",
        "claimed_by",
        "last_error",
        "enrollment_id",
    ):
        if saga.get(key) is not None:
            table.add_row(key, str(saga[key]))
    return table


def _next(owed: list[dict[str, str]]) -> Text:
    text = Text()
    if not owed:
        text.append("Next step: nothing: done.", style="bold green")
        return text
    text.append("Next step", style="bold red")
    for step in owed:
        text.append(
            f"\n• {visible(step['owner'])} must {step['action']};", style="bold"
        )
        text.append(f"\n  recorded in {step['recorded_in']}")
    return text


def _at(at: str | None) -> str:
    return "-" if at is None else at.replace("+00:00", "Z")
