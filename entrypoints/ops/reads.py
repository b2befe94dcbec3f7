"""The console's reads for the /ops routes, the page and /metrics.

The composition root's `console_reads` when the app was given it (`app.state.
console_reads`); until then the same wiring is made here, the one place in the
console that names adapters' classes.
"""

from __future__ import annotations

from typing import Any

from nats.js import JetStreamContext

from adapters.exports.retention import export_files_size
from adapters.nats.chain_lags import JetStreamChainLags
from adapters.nats.replay import JetStreamDeadLetters
from adapters.nats.trace_messages import JetStreamTraceMessages
from adapters.postgres.audit_records import PostgresAuditRecords
from adapters.postgres.chain_counts import PostgresStatus
from adapters.postgres.confirmed_counts import SqlConfirmedCounts
from adapters.postgres.trace_records import PostgresTrace
from application.console_reads import ConsoleReads
from entrypoints.config.container import Container
from entrypoints.ops.operator_command import ReadsOf
from projections import statistics


def app_reads(state: Any, js: JetStreamContext) -> ConsoleReads:
    """`state`: the app's (its container, and the composition root's wiring)."""
    reads_of: ReadsOf = getattr(state, "console_reads", None) or _wired_here
    return reads_of(state.container, js)


def _wired_here(container: Container, js: JetStreamContext) -> ConsoleReads:
    app = container.app
    return ConsoleReads(
        chain_counts=PostgresStatus(container.engine, app.recorder, app.mapper),
        chain_lags=JetStreamChainLags(js),
        export_files=export_files_size,
        trace_records=PostgresTrace(container.engine, app.recorder),
        trace_messages=JetStreamTraceMessages(js),
        dead_letters=JetStreamDeadLetters(js, container.engine),
        audit_records=PostgresAuditRecords(container.engine, app.recorder, app.mapper),
        confirmed=SqlConfirmedCounts(container.engine, statistics.lessons.c.confirmed),
    )
