"""The operator's console's reads, wired: adapters behind application/console_reads'
ports, for `club status|trace|dlq|audit` and the API's /ops routes and page.
Called by the composition root (bootstrap) and the app it builds (api.py)."""

from __future__ import annotations

from nats.js import JetStreamContext

from adapters.exports.retention import export_files_size
from adapters.nats.chain_lags import JetStreamChainLags
from adapters.nats.replay import JetStreamDeadLetters
from adapters.nats.trace_messages import JetStreamTraceMessages
from adapters.postgres.audit_records import PostgresAuditRecords
from adapters.postgres.chain_counts import PostgresStatus
from adapters.postgres.confirmed_counts import SqlConfirmedCounts
from adapters.postgres.dlq_audit import SqlDlqAuditTrail
from adapters.postgres.provider_circuits import SqlProviderCircuits
from adapters.postgres.trace_records import PostgresTrace
from adapters.postgres.work_lists import PostgresWorkLists
from application.ports import ConsoleReads
from entrypoints.config.container import Container
from projections import statistics


def chain_counts(container: Container) -> PostgresStatus:
    """The database's side of the chain's hops (the console's and the roles')."""
    return PostgresStatus(
        container.engine, container.app.recorder, container.app.mapper
    )


def confirmed_counts(container: Container) -> SqlConfirmedCounts:
    """Confirmed enrollments in the event store beside the statistics' count."""
    return SqlConfirmedCounts(container.engine, statistics.lessons.c.confirmed)


def work_lists(container: Container) -> PostgresWorkLists:
    """Purchases, notifications and exports by state."""
    app = container.app
    return PostgresWorkLists(container.engine, app.recorder, app.mapper)


def dead_letter_queue(
    js: JetStreamContext, container: Container | None = None
) -> JetStreamDeadLetters:
    """Without a container the entries can be read, not replayed (a replay keeps
    its audit record in the database)."""
    return JetStreamDeadLetters(js, None if container is None else container.engine)


def console_reads(container: Container, js: JetStreamContext) -> ConsoleReads:
    """Every read of the operator's console (`club status|trace|dlq|audit`, the
    /ops routes and page), over one container and one JetStream context."""
    app = container.app
    return ConsoleReads(
        chain_counts=chain_counts(container),
        chain_lags=JetStreamChainLags(js),
        export_files=export_files_size,
        trace_records=PostgresTrace(container.engine, app.recorder),
        trace_messages=JetStreamTraceMessages(js),
        dead_letters=dead_letter_queue(js, container),
        audit_records=PostgresAuditRecords(container.engine, app.recorder, app.mapper),
        confirmed=confirmed_counts(container),
        work_lists=work_lists(container),
        dlq_audit=SqlDlqAuditTrail(container.engine),
        circuits=SqlProviderCircuits(container.engine),
    )
