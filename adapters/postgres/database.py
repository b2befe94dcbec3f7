"""Connection settings derived from one `postgresql://` URL."""

from __future__ import annotations

import select
from typing import Any
from urllib.parse import unquote, urlsplit

import psycopg
import sqlalchemy as sa

from adapters.postgres.call_deadline import (
    bounded_connection_class,
    deadline_for,
    suspect,
)


def sqlalchemy_url(url: str) -> str:
    """SQLAlchemy wants the driver named; users give the plain libpq form."""
    scheme, _, rest = url.partition("://")
    if scheme in ("postgres", "postgresql"):
        return f"postgresql+psycopg://{rest}"
    return url


# A peer that goes silent (a failover, a cut cable: no reset) is noticed by TCP
# keepalive probes within about 5 + 3 * 2 = 11 s instead of the kernel's two hours.
KEEPALIVES: dict[str, object] = {
    "keepalives": 1,
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 3,
}
STATEMENT_TIMEOUT_S = 15.0  # no statement of a running role takes longer


def server_options(
    *, statement_timeout: float | None, hold_locks_at_most: float | None = None
) -> str:
    """libpq `options`: limits the server enforces on every statement and lock."""
    options = []
    if statement_timeout:
        options.append(f"-c statement_timeout={_ms(statement_timeout)}")
    if hold_locks_at_most is not None:
        ms = _ms(hold_locks_at_most)
        options.append(f"-c idle_in_transaction_session_timeout={ms}")
        options.append(f"-c lock_timeout={ms}")
    return " ".join(options)


def create_engine(
    url: str,
    *,
    pool_size: int = 5,
    hold_locks_at_most: float | None = None,
    statement_timeout: float | None = STATEMENT_TIMEOUT_S,
) -> sa.Engine:
    """`hold_locks_at_most` (seconds): the server ends a session left idle inside a
    transaction for longer, and a statement waits no longer for a lock — so a process
    paused mid-transaction cannot keep others from a row it had locked.
    `statement_timeout` None: no limit (migrations)."""
    connect_args: dict[str, object] = {"connect_timeout": 5, **KEEPALIVES}
    options = server_options(
        statement_timeout=statement_timeout, hold_locks_at_most=hold_locks_at_most
    )
    if options:
        connect_args["options"] = options
    engine = sa.create_engine(
        sqlalchemy_url(url),
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_timeout=5,
        connect_args=connect_args,
        # A failed statement's error names the statement, never its values: they
        # are addresses, names and keys, and errors reach logs and DLQ reasons.
        hide_parameters=True,
    )
    sa.event.listen(engine, "checkout", _ping_if_the_server_spoke(engine.dialect))
    sa.event.listen(engine, "handle_error", _session_ended_is_a_disconnect)
    sa.event.listen(
        engine, "do_connect", _connect_bounded(deadline_for(statement_timeout))
    )
    return engine


def _session_ended_is_a_disconnect(context: sa.engine.ExceptionContext) -> Any:
    """The server ends a session left idle inside a transaction (a paused process:
    `hold_locks_at_most`) with SQLSTATE 25P03, which psycopg classes an
    InternalError, as if the statement were wrong: the woken process would crash
    instead of retrying. It is a lost connection: replaced, and raised as one."""
    error = context.original_exception
    if not isinstance(error, psycopg.errors.IdleInTransactionSessionTimeout):
        return None
    context.is_disconnect = True
    return sa.exc.OperationalError(
        context.statement,
        context.parameters,
        error,
        hide_parameters=True,
        connection_invalidated=True,
    )


def _connect_bounded(deadline_s: float | None) -> Any:
    """SQLAlchemy's connect hook: its connections' calls end by `deadline_s`
    (adapters/postgres/call_deadline.py). One that ends there is closed, which
    the dialect reads as a disconnect: every connection the pool made before it
    is replaced at its next checkout, as after a restart."""
    connection_class = bounded_connection_class(deadline_s)

    def do_connect(_dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
        return connection_class.connect(*cargs, **cparams)

    return do_connect


def server_spoke(conn: psycopg.Connection[Any]) -> bool:
    """Whether an idle connection has something to read: no round trip, one poll(2).

    Between two requests the server says nothing, unless it is closing the
    connection — a restart, pg_terminate_backend or an idle timeout sends its
    FATAL message and then the end of the stream. The pre-ping this replaces was a
    round trip before every checkout (docs/decisions/2026-11-30-no-pre-ping.md).
    """
    if conn.closed:
        return True
    poller = select.poll()
    poller.register(conn.fileno(), select.POLLIN | select.POLLPRI)
    return bool(poller.poll(0))


def _ping_if_the_server_spoke(dialect: sa.Dialect) -> Any:
    """SQLAlchemy's checkout hook: the pre-ping only when the server spoke (a stray
    NOTICE is harmless); a failed one replaces every pooled connection, as
    `pool_pre_ping` did — after a restart they are all dead."""

    def checkout(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        if suspect(dbapi_connection):  # its server hung since: replace them all
            raise sa.exc.InvalidatePoolError("a call to the database hung")
        if not server_spoke(dbapi_connection):
            return
        try:
            dialect.do_ping(dbapi_connection)
        except Exception as error:
            raise sa.exc.InvalidatePoolError(str(error)) from error

    return checkout


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


def eventsourcing_env(url: str, *, lock_timeout_s: int = 2) -> dict[str, str]:
    """Map one URL onto the eventsourcing library's POSTGRES_* settings."""
    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql", "postgresql+psycopg"):
        msg = f"CLUB_DATABASE_URL must start with postgresql://, not {parts.scheme}://"
        raise ValueError(msg)
    return {
        "PERSISTENCE_MODULE": "adapters.postgres.factory:ClubFactory",
        "APPLICATION_RECORDER_TOPIC": "adapters.postgres.recorder:ClubRecorder",
        "POSTGRES_DBNAME": unquote(parts.path.lstrip("/")) or "postgres",
        "POSTGRES_HOST": parts.hostname or "127.0.0.1",
        "POSTGRES_PORT": str(parts.port or 5432),
        "POSTGRES_USER": unquote(parts.username or "postgres"),
        "POSTGRES_PASSWORD": unquote(parts.password or ""),
        # A stuck lock must surface as 503 + Retry-After, never as a hang.
        "POSTGRES_LOCK_TIMEOUT": str(lock_timeout_s),
        "POSTGRES_CONNECT_TIMEOUT": "5",
        "POSTGRES_POOL_SIZE": "10",
        "POSTGRES_MAX_OVERFLOW": "10",
        # No round trip before each checkout: ClubRecorder retries a read, and an
        # insert that never reached COMMIT, once on a fresh connection.
        "POSTGRES_PRE_PING": "n",
        "CREATE_TABLE": "n",  # `club migrate` creates tables, not every process
        # Lessons are read on every enrollment: keep them warm, catch up on read.
        "AGGREGATE_CACHE_MAXSIZE": "1000",
        "AGGREGATE_CACHE_FASTFORWARD": "y",
    }
