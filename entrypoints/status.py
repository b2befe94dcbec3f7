"""`club status` and `club capacity`: the chain's queues as operators read them."""

from __future__ import annotations

import argparse

from entrypoints import capacity_cli


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    capacity_cli.add_command(sub)
