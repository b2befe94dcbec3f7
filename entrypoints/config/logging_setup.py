"""The one logging set-up of every `club` process, called once by `cli.main`.

Each line is one JSON object on stderr — `timestamp` (ISO 8601, UTC), `level`,
`event`, `role` (which `club` process wrote it) and whatever ids the unit of work
bound with `structlog.contextvars` (a request's `request_id`, a message's
`event_id`, `correlation_id` and `consumer`, a batch's notification ids, a
purchase's `purchase_id`). stderr, because some commands' stdout is data
(`club status --json`); under `club up` every role shares the terminal anyway.
`CLUB_LOG_FORMAT=console` renders the same lines for a person's terminal.

Before a line is written, every string in it — an exception's traceback included —
has its URL passwords masked and anything that looks like an e-mail address
replaced by "<e-mail>": the code never logs a profile, and this catches the error
text that quotes one anyway. The standard library's loggers (uvicorn, nats-py,
asyncio) go through the same processors.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping, MutableMapping
from types import TracebackType
from typing import Any, TextIO

import structlog
from structlog.typing import Processor

from application.personal_data import without_addresses
from entrypoints.config.masking import masked

FORMATS = ("json", "console")
FORMAT_SETTING = "CLUB_LOG_FORMAT"


class LogFormatError(ValueError):
    """CLUB_LOG_FORMAT names no known format."""


def log_format(env: Mapping[str, str]) -> str:
    chosen = env.get(FORMAT_SETTING, "json").strip().lower() or "json"
    if chosen not in FORMATS:
        msg = f"{FORMAT_SETTING} must be one of {', '.join(FORMATS)}, not {chosen!r}"
        raise LogFormatError(msg)
    return chosen


def configure_logging(role: str, fmt: str = "json") -> None:
    """structlog and the standard library's root logger, for the process `role`.
    Safe to call again (a test's in-process `main()`): it replaces, never stacks."""
    renderer: Processor = (
        structlog.dev.ConsoleRenderer(colors=False)
        if fmt == "console"
        else structlog.processors.JSONRenderer()
    )
    stamped: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _RoleAdder(role),
    ]
    # Tracebacks become text first, so that the redaction sees them too.
    redacted: list[Processor] = [
        structlog.processors.StackInfoRenderer(),
        structlog.processors.format_exc_info,
        redact_log_event,
    ]
    structlog.configure(
        processors=[*stamped, *redacted, renderer],
        logger_factory=_stderr_logger,
        wrapper_class=structlog.make_filtering_bound_logger(logging.NOTSET),
        cache_logger_on_first_use=False,
    )
    _route_standard_logging(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[*stamped, structlog.stdlib.add_logger_name],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                *redacted,
                renderer,
            ],
        )
    )
    sys.excepthook = _log_crash


def redact_log_event(
    _logger: object, _method: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """A structlog processor: no password, no e-mail address, at any depth."""
    for key, value in event.items():
        event[key] = redacted(value)
    return event


def redacted(value: Any) -> Any:
    """`value` with every string in it passed through both masks; a value JSON
    cannot hold (an exception, a UUID) is logged as its text, so it is masked too."""
    if isinstance(value, str):
        return without_addresses(masked(value))
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, Mapping):
        return {str(k): redacted(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [redacted(v) for v in value]
    return redacted(str(value))


class _RoleAdder:
    def __init__(self, role: str) -> None:
        self._role = role

    def __call__(
        self, _logger: object, _method: str, event: MutableMapping[str, Any]
    ) -> MutableMapping[str, Any]:
        event.setdefault("role", self._role)
        return event


def _stderr_logger(*_: Any) -> structlog.PrintLogger:
    # Looked up at each logger's creation, never kept: a test that swaps
    # sys.stderr (pytest's capsys) must not leave a closed stream behind.
    return structlog.PrintLogger(sys.stderr)


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A handler on whatever sys.stderr is now (the same reason as above)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        pass  # always the current sys.stderr


def _route_standard_logging(formatter: logging.Formatter) -> None:
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _StderrHandler)]:
        root.removeHandler(handler)
    handler = _StderrHandler()
    handler.setFormatter(formatter)
    root.addHandler(handler)


def _log_crash(
    kind: type[BaseException], error: BaseException, tb: TracebackType | None
) -> None:
    """A role that dies of a bug says so in a log line like any other (masked)."""
    if issubclass(kind, KeyboardInterrupt):
        sys.__excepthook__(kind, error, tb)
        return
    structlog.get_logger().critical("process.crashed", exc_info=(kind, error, tb))
