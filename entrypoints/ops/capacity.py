"""`club capacity`: the capacity model (application/capacity.py) on the command line."""

from __future__ import annotations

import argparse
import json
import math
import sys

from application.capacity import CapacityInputError, plan
from entrypoints.config.settings import Settings


def add_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    capacity = sub.add_parser(
        "capacity",
        help="drain time and the last queued item's wait, from backlog and rates",
    )
    capacity.add_argument(
        "--backlog", type=_number, required=True, metavar="N", help="items queued now"
    )
    capacity.add_argument(
        "--arrival-rate",
        type=_number,
        required=True,
        metavar="A",
        help="items arriving per second",
    )
    capacity.add_argument(
        "--service-rate",
        type=_number,
        required=True,
        metavar="S",
        help="items served per second (above 0)",
    )
    capacity.add_argument("--json", action="store_true", help="the numbers as JSON")
    capacity.set_defaults(run=capacity_command)


def capacity_command(_: Settings, args: argparse.Namespace) -> int:
    try:
        model = plan(
            backlog=args.backlog,
            arrival_rate=args.arrival_rate,
            service_rate=args.service_rate,
        )
    except CapacityInputError as e:
        sys.stderr.write(f"club capacity: {e}\n")
        return 2
    if args.json:
        drain = model.drain_seconds
        sys.stdout.write(
            json.dumps(
                {
                    "backlog": model.backlog,
                    "arrival_rate": model.arrival_rate,
                    "service_rate": model.service_rate,
                    "drains": model.drains,
                    "drain_seconds": drain if math.isfinite(drain) else None,
                    "last_queued_wait_seconds": model.last_queued_wait_seconds,
                }
            )
            + "\n"
        )
        return 0
    sys.stdout.write(model.explain() + "\n")
    return 0


def _number(raw: str) -> float:
    """argparse answers a bad value with the usage line and exit 2, not a traceback."""
    try:
        value = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{raw!r} must be a finite number")
    if value < 0:
        raise argparse.ArgumentTypeError(f"{raw!r} cannot be negative")
    return value
