"""`club status` (and `club capacity`): the chain's queues as operators read them.

Rich tables by default, `--json` for machines (the same document as /ops/status),
`--watch` to refresh until Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import sys
from typing import Any

from rich.console import Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from application.retention import shown
from entrypoints.config.container import Container
from entrypoints.config.settings import Settings, exports_dir
from entrypoints.ops import capacity as capacity_cli
from entrypoints.ops.attention import attention_lines
from entrypoints.ops.chain_status import (
    ChainStatus,
    as_json,
    consumer_detail,
    read_chain,
    roles_alive,
    stalled_fact,
)
from entrypoints.ops.operator_command import (
    OpenContainer,
    ReadsOf,
    Unanswered,
    connect_within_budget,
    read_once,
)
from entrypoints.ops.provider_status import down_lines
from entrypoints.ops.terminal import OperatorConsole


def add_commands(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    open_container: OpenContainer,
    reads_of: ReadsOf,
) -> None:
    capacity_cli.add_command(sub)
    status = sub.add_parser(
        "status",
        help="every hop's count and oldest age, lags, DLQ, sizes, delivery time",
    )
    status.add_argument("--json", action="store_true", help="one JSON document")
    status.add_argument(
        "--watch",
        nargs="?",
        type=_interval,
        const=2.0,
        default=None,
        metavar="SECONDS",
        help="refresh every SECONDS (default 2) until Ctrl-C",
    )
    status.set_defaults(
        run=functools.partial(status_command, open=open_container, reads_of=reads_of)
    )


def status_command(
    settings: Settings,
    args: argparse.Namespace,
    *,
    open: OpenContainer,
    reads_of: ReadsOf,
) -> int:
    database_url, nats_url = settings.operator_services()

    def show(container: Container) -> None:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(_show(settings, container, reads_of, nats_url, args))

    return (
        1
        if isinstance(read_once("status", open, database_url, show), Unanswered)
        else 0
    )


async def _show(
    settings: Settings,
    container: Container,
    reads_of: ReadsOf,
    nats_url: str,
    args: argparse.Namespace,
) -> None:
    nc = await connect_within_budget(nats_url, "club-status")
    reads = reads_of(container, nc.jetstream())

    async def read() -> ChainStatus:
        return await read_chain(
            reads,
            promise_seconds=settings.promise_seconds,
            configured_service_per_s=settings.email_rate_per_s,
            retention=settings.retention,
            exports_dir=exports_dir(settings.data_dir),
        )

    try:
        if args.json:
            while True:
                sys.stdout.write(json.dumps(as_json(await read())) + "\n")
                sys.stdout.flush()
                if args.watch is None:
                    return
                await asyncio.sleep(args.watch)
        console = OperatorConsole()
        if args.watch is None:
            console.print(render(await read()))
            return
        with Live(render(await read()), console=console, auto_refresh=False) as live:
            while True:
                await asyncio.sleep(args.watch)
                live.update(render(await read()), refresh=True)
    finally:
        await nc.close()


def render(status: ChainStatus) -> Group:
    shown = as_json(status)
    waiting = attention_lines(shown)  # none: no line at all
    return Group(
        _verdict(shown),
        *([Text("\n".join(waiting), style="bold yellow")] if waiting else []),
        _hops(shown),
        _roles(shown),
        _states(shown["work_classes"]["notifications"].get("states", [])),
        _stores(shown["stores"]),
    )


def _verdict(shown: dict[str, Any]) -> Text:
    delivery = shown["delivery"]
    verdict = delivery["verdict"]
    style = "bold green" if verdict == "on time" else "bold red"
    rate = "measured" if delivery["service_measured"] else "assumed: none finished"
    drain = delivery["drain_seconds"]
    text = Text()
    text.append(f"Confirmation e-mail: {verdict}", style=style)
    text.append(
        f" — a student enrolling now waits ~{_s(delivery['eta_seconds'])} "
        f"(promise {_s(delivery['promise_seconds'])}); "
        f"{delivery['backlog']} queued, oldest {_s(delivery['oldest_age_seconds'])}; "
        f"{delivery['arrival_per_s']:.2f}/s arriving, "
        f"{delivery['service_per_s']:.2f}/s served ({rate} in the last "
        f"{_s(delivery['rate_window_seconds'])}); drains "
        + ("never" if drain is None else f"in {_s(drain)}")
        + ("" if delivery["service_measured"] else " at the assumed rate")
    )
    fact = stalled_fact(shown)
    if fact is not None:
        text.append(f"\n{fact}")
    for line in down_lines(shown):
        text.append(f"\n{line}", style="bold red")
    return text


def _roles(shown: dict[str, Any]) -> Table:
    """Each role and the processes of it that beat in the window: a role without
    one is not running."""
    table = Table(title="Roles alive", title_justify="left")
    for column in ("role", "alive", "last beat", "instance"):
        table.add_column(column, justify="right" if column == "alive" else "left")
    for role, beats in roles_alive(shown).items():
        if not beats:
            table.add_row(role, "0", "-", "none running", style="red")
        for beat in beats:
            table.add_row(
                role,
                str(len(beats)),
                f"{_s(beat['last_beat_s_ago'])} ago",
                beat["instance"],
            )
    return table


def _hops(shown: dict[str, Any]) -> Table:
    table = Table(title="Hops: count and the oldest item's age", title_justify="left")
    for column in ("hop", "count", "oldest", "detail"):
        table.add_column(column, justify="right" if column == "count" else "left")
    outbox = shown["outbox"]
    table.add_row(
        "outbox (stored, unpublished)",
        str(outbox["unpublished"]),
        _s(outbox["oldest_age_seconds"]),
        f"relay position {outbox['position']}",
    )
    for hop in shown["consumers"]:
        detail = consumer_detail(hop)
        table.add_row(
            f"{hop['kind']} {hop['consumer']}",
            str(hop["lag_events"]),
            _s(hop["lag_seconds"]),
            detail,
        )
    deadlines = shown["saga_deadlines"]
    if deadlines is not None:
        table.add_row(
            "saga deadlines (overdue)",
            str(deadlines["overdue"]),
            _s(deadlines["oldest_overdue_seconds"]),
            f"{deadlines['scheduled']} scheduled",
        )
    for dead in shown["dlq"]:
        table.add_row(
            f"DLQ {dead['consumer']}",
            str(dead["messages"]),
            _s(dead["oldest_age_seconds"]),
            f"`club dlq list --consumer {dead['consumer']}`",
        )
    if not shown["dlq"]:
        table.add_row("DLQ", "0", "-", "empty")
    return table


def _states(states: list[dict[str, Any]]) -> Table:
    table = Table(title="Notifications by state", title_justify="left")
    for column in ("state", "count", "oldest"):
        table.add_column(column, justify="right" if column == "count" else "left")
    for state in states:
        table.add_row(
            state["state"], str(state["count"]), _s(state["oldest_age_seconds"])
        )
    if not states:  # a worker opens one as it takes an event that asks for e-mail
        table.add_row("none opened yet", "0", "-")
    return table


def _stores(stores: dict[str, Any]) -> Table:
    table = Table(title="Store sizes and retention", title_justify="left")
    table.add_column("store")
    table.add_column("rows / messages", justify="right")
    table.add_column("bytes", justify="right")
    table.add_column("oldest")
    table.add_column("kept for")
    ages = stores.get("oldest_age_seconds", {})
    kept = stores.get("retention_seconds", {})
    for name, rows in stores["rows"].items():
        table.add_row(name, str(rows), "", _age(ages, name), _kept(kept, name))
    for name, stream in stores["streams"].items():
        table.add_row(
            f"stream {name}",
            str(stream["messages"]),
            str(stream["bytes"]),
            "",
            _kept(kept, name),
        )
    files = stores.get("export_files")
    if files is not None:
        table.add_row(
            "export files",
            str(files["files"]),
            str(files["bytes"]),
            _span(files["oldest_age_seconds"]),
            _kept(kept, "export_files"),
        )
    for consumer, before in stores.get("inbox_horizons", {}).items():
        table.add_row(f"inbox {consumer}", "", "", f"trimmed before {before}", "")
    return table


def _age(ages: dict[str, float | None], name: str) -> str:
    return _span(ages[name]) if name in ages else ""


def _span(seconds: float | None) -> str:
    """Ages of stores run to days: the two largest units (12d 3h), not seconds."""
    if seconds is None or seconds < 60:  # noqa: PLR2004 - under a minute
        return _s(seconds)
    return " ".join(shown(round(seconds)).split()[:2])


def _kept(kept: dict[str, float], name: str) -> str:
    """A store without a retention is kept for ever (the notifications' states)."""
    if not kept:
        return ""
    return shown(kept[name]) if name in kept else "always"


def _s(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.1f} s"


def _interval(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{raw!r} is not a number of seconds"
        ) from None
    if not 0.2 <= value <= 3600:  # noqa: PLR2004 - a sane refresh range
        raise argparse.ArgumentTypeError(f"{raw!r}: refresh between 0.2 and 3600 s")
    return value
