"""The console's reads for the /ops routes, the page and /metrics: the ones the
composition root wired into the app (`app.state.console_reads`)."""

from __future__ import annotations

from typing import Any

from nats.js import JetStreamContext

from application.ports import ConsoleReads
from entrypoints.ops.operator_command import ReadsOf


def app_reads(state: Any, js: JetStreamContext) -> ConsoleReads:
    """`state`: the app's (its container, and the composition root's wiring)."""
    reads_of: ReadsOf = state.console_reads
    return reads_of(state.container, js)
