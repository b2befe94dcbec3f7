"""Roles that say they are alive, as real processes: the relay and the API beat,
`club status --json` lists them; the relay killed outright (SIGKILL: nothing runs
on the way out) drops out of the live list within the window; the API stopped
cleanly (SIGTERM) removes its own row at once."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from application.console_reads import ALIVE_WITHIN_S
from tests.stack import Stack, eventually, running_stack, scratch_for

STARTUP_S = 60  # roles start beside other suites on a shared machine


def status(stack: Stack) -> dict[str, Any]:
    answer = subprocess.run(
        [sys.executable, "-m", "entrypoints.cli", "status", "--json"],
        env=stack.env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert answer.returncode == 0, answer.stderr
    return json.loads(answer.stdout)


def beats_of(stack: Stack, pid: int) -> list[dict[str, Any]]:
    """The live roles `club status` lists for one process (its instance names it:
    host:pid:random)."""
    return [
        role
        for role in status(stack)["roles"]
        if role["instance"].split(":")[-2] == str(pid)
    ]


def test_a_role_s_beat_is_listed_and_drops_out_when_it_dies(
    migrated: tuple[str, str], request: pytest.FixtureRequest
) -> None:
    logs = scratch_for(request, "logs")
    with running_stack(migrated, logs, ("api", "relay")) as stack:
        relay, api = stack.procs["relay"].pid, stack.procs["api"].pid
        [relay_beat] = eventually(lambda: beats_of(stack, relay), timeout=STARTUP_S)
        assert (relay_beat["kind"], relay_beat["name"]) == ("relay", "")
        assert 0 <= relay_beat["last_beat_s_ago"] < ALIVE_WITHIN_S
        [api_beat] = eventually(lambda: beats_of(stack, api), timeout=STARTUP_S)
        assert api_beat["kind"] == "api"

        stack.kill("relay")  # SIGKILL: its row stays, and ages out of the window
        eventually(lambda: not beats_of(stack, relay), timeout=ALIVE_WITHIN_S + 10)

        stack.stop("api")  # SIGTERM: a clean stop forgets its row on the way out
        assert beats_of(stack, api) == []
