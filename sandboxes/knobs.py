"""Fault knobs of a sandbox provider: their names, checks, and start-up flags.

One table per sandbox (`Knob`s); the same table checks `PUT /knobs`, the start-up
arguments (`--fail-rate 0.3`: underscores become dashes) and `run_*(knobs=...)`,
so a value refused in one place is refused in all of them.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

KnobValue = int | float | bool


class KnobError(ValueError):
    """A knob name or value that is refused; the message names the fix."""


@attrs.frozen(kw_only=True)
class Knob:
    name: str
    default: KnobValue
    help: str
    low: float | None = None
    high: float | None = None

    @property
    def kind(self) -> type[KnobValue]:
        return type(self.default)

    def check(self, value: object) -> KnobValue:
        """The value as this knob holds it, or `KnobError`."""
        if self.kind is bool:
            if not isinstance(value, bool):
                raise KnobError(f"{self.name} must be true or false")
            return value
        # bool is an int in Python; `true` for a rate is a mistake, not 1.
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise KnobError(f"{self.name} must be a number")
        if not math.isfinite(value):
            raise KnobError(f"{self.name} must be a finite number")
        if self.kind is int:
            if value != int(value):
                raise KnobError(f"{self.name} must be a whole number")
            value = int(value)
        if (self.low is not None and value < self.low) or (
            self.high is not None and value > self.high
        ):
            raise KnobError(f"{self.name} must be within {self.low}..{self.high}")
        return self.kind(value)


class KnobBoard:
    """The current values; changed as a whole, so readers never see half an update."""

    def __init__(self, knobs: Sequence[Knob], values: Mapping[str, object]) -> None:
        self._knobs = {k.name: k for k in knobs}
        self._values: dict[str, KnobValue] = {k.name: k.default for k in knobs}
        self.update(values)

    def update(self, changes: Mapping[str, object]) -> dict[str, KnobValue]:
        unknown = sorted(set(changes) - set(self._knobs))
        if unknown:
            known = ", ".join(self._knobs)
            raise KnobError(f"unknown knob(s) {', '.join(unknown)}; known: {known}")
        checked = {name: self._knobs[name].check(v) for name, v in changes.items()}
        self._values = self._values | checked
        return self.values()

    def values(self) -> dict[str, KnobValue]:
        return dict(self._values)

    def __getitem__(self, name: str) -> Any:
        return self._values[name]


def add_knob_arguments(parser: argparse.ArgumentParser, knobs: Sequence[Knob]) -> None:
    for knob in knobs:
        flag = "--" + knob.name.replace("_", "-")
        if knob.kind is bool:
            parser.add_argument(
                flag, dest=knob.name, action=argparse.BooleanOptionalAction,
                default=None, help=knob.help,
            )  # fmt: skip
        else:
            parser.add_argument(
                flag, dest=knob.name, type=_parser_for(knob), default=None,
                metavar=knob.kind.__name__.upper(),
                help=f"{knob.help} (default {knob.default})",
            )  # fmt: skip


def knobs_from(args: argparse.Namespace, knobs: Sequence[Knob]) -> dict[str, object]:
    """Only the knobs given on the command line; the rest keep their defaults."""
    given = {k.name: getattr(args, k.name) for k in knobs}
    return {name: value for name, value in given.items() if value is not None}


def _parser_for(knob: Knob) -> Callable[[str], KnobValue]:
    def parse(text: str) -> KnobValue:
        try:
            number = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        try:
            return knob.check(number)
        except KnobError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parse
