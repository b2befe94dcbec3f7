"""`club purchases|notifications|exports list`: a person's work by state, oldest
first, each with its age, so an operator sees what has waited longest."""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from rich.table import Table

from application.ports import WorkLists
from application.work_lists import (
    EXPORTS,
    NOTIFICATIONS,
    PURCHASES,
    STATES,
    WorkItem,
    WorkPage,
    WorkTally,
    check_limit,
    check_state,
)
from entrypoints.config.container import Container
from entrypoints.config.settings import ConfigError, Settings
from entrypoints.ops.attention import work_line
from entrypoints.ops.operator_command import OpenContainer, Unanswered, read_once
from entrypoints.ops.terminal import OperatorConsole
from entrypoints.ops.view import seconds

# A container in, the lists out (the composition root's wiring).
WorkListsOf = Callable[[Container], WorkLists]
# Each list's command, its state option and what it lists.
COMMANDS = {
    PURCHASES: ("--status", "purchases by status: refunds, reviews, payments"),
    NOTIFICATIONS: ("--state", "e-mails by state: unknown, failed, dead-lettered"),
    EXPORTS: ("--status", "roster exports by status: failed, running, pending"),
}
DEFAULT_LIMIT = 50


def add_commands(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    open_container: OpenContainer,
    lists_of: WorkListsOf,
) -> dict[str, argparse._SubParsersAction[argparse.ArgumentParser]]:
    """`club purchases|notifications|exports list`; returns each command's actions,
    where others (`club purchases resolve`) add theirs."""
    kinds = {}
    for kind, (option, help_text) in COMMANDS.items():
        command = sub.add_parser(kind, help=help_text)
        actions = kinds[kind] = command.add_subparsers(required=True, metavar="ACTION")
        listing = actions.add_parser(
            "list", help="oldest in its state first; without a state, the tallies"
        )
        listing.add_argument(
            option,
            dest="state",
            metavar="S",
            help=f"one of: {', '.join(STATES[kind])}",
        )
        listing.add_argument(
            "--limit",
            type=int,
            default=DEFAULT_LIMIT,
            metavar="N",
            help=f"at most N (default {DEFAULT_LIMIT})",
        )
        listing.add_argument(
            "--json", action="store_true", help="one JSON object a line"
        )
        listing.set_defaults(
            run=functools.partial(
                list_command, kind=kind, open=open_container, lists_of=lists_of
            )
        )
    return kinds


def state_named(kind: str, raw: str) -> str:
    """The state as `kind` spells it: `manual-review` is `manual_review`, and
    `dead_lettered` is `dead-lettered`; else a message naming the valid ones."""
    for spelling in (raw, raw.replace("-", "_"), raw.replace("_", "-")):
        if spelling in STATES[kind]:
            return spelling
    return check_state(kind, raw)  # raises, naming them


def list_command(
    settings: Settings,
    args: argparse.Namespace,
    *,
    kind: str,
    open: OpenContainer,
    lists_of: WorkListsOf,
) -> int:
    try:
        state = None if args.state is None else state_named(kind, args.state.strip())
        check_limit(args.limit)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    database_url, _ = settings.operator_services()

    def read(container: Container) -> WorkPage | list[WorkTally]:
        lists = lists_of(container)
        if state is None:
            return [t for t in lists.tallies() if t.kind == kind]
        return lists.page(kind, state, limit=args.limit)

    found = read_once(f"{kind} list", open, database_url, read)
    if isinstance(found, Unanswered):
        return 1
    now = datetime.now(UTC)
    if isinstance(found, list):
        _show_tallies(found, now, as_json=args.json)
    else:
        _show_page(found, now, as_json=args.json)
    return 0


def item_json(item: WorkItem, now: datetime) -> dict[str, Any]:
    return {
        "id": str(item.id),
        "state": item.state,
        "since": item.since.isoformat(),
        "age_seconds": round(item.age_seconds(now), 3),
        "reason": item.reason,
        **item.detail,
    }


def _show_page(page: WorkPage, now: datetime, *, as_json: bool) -> None:
    if as_json:
        for item in page.items:
            sys.stdout.write(json.dumps(item_json(item, now)) + "\n")
        return
    console = OperatorConsole()
    if not page.items:
        console.print(f"No {page.kind} are {page.state}.")
        return
    shown = len(page.items)
    table = Table(
        title=f"{page.total} {page.kind} {page.state}, oldest first"
        + ("" if shown == page.total else f" (the first {shown}; --limit)"),
        title_justify="left",
    )
    extra = list(page.items[0].detail)
    for column in ("id", "state", "age", "since", "reason", *extra):
        table.add_column(column, justify="right" if column == "age" else "left")
    for item in page.items:
        table.add_row(
            str(item.id),
            item.state,
            seconds(item.age_seconds(now)),
            item.since.strftime("%Y-%m-%d %H:%M:%S"),
            item.reason or "",
            *(item.detail.get(column, "") for column in extra),
        )
    console.print(table)


def _show_tallies(tallies: list[WorkTally], now: datetime, *, as_json: bool) -> None:
    shown = [
        {
            "kind": tally.kind,
            "state": tally.state,
            "said": tally.said,
            "count": tally.count,
            "oldest_age_seconds": tally.oldest_age_seconds(now),
        }
        for tally in tallies
    ]
    if as_json:
        for line in shown:
            sys.stdout.write(json.dumps(line) + "\n")
        return
    console = OperatorConsole()
    for line in shown:
        console.print(work_line(line))
