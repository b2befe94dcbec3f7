"""The one logging set-up: JSON lines on stderr, ids from the context, no address.

Each case runs in a fresh interpreter: the set-up is process-wide, and this test
process must keep its own."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from entrypoints.config.logging_setup import LogFormatError, log_format, redacted


def logged(code: str, *, env_format: str | None = None) -> tuple[str, list[Any]]:
    """Run `code` after the set-up for the role "relay"; stdout and the JSON lines."""
    prelude = (
        "import logging, structlog\n"
        "from structlog.contextvars import bound_contextvars\n"
        "from entrypoints.config.logging_setup import configure_logging\n"
        f"configure_logging('relay', {env_format or 'json'!r})\n"
        "log = structlog.get_logger()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.strip()]
    return done.stdout, lines


def test_a_line_is_json_with_time_level_event_role_and_the_bound_ids() -> None:
    out, lines = logged(
        """
        with bound_contextvars(event_id="e-1", correlation_id="c-1"):
            log.info("worker.retry_later", delay=1.5)
        log.info("after")
        """
    )
    assert out == ""  # stdout is left to the command's data
    first, after = lines
    assert first["event"] == "worker.retry_later"
    assert first["level"] == "info"
    assert first["role"] == "relay"
    assert first["timestamp"].endswith("Z")  # ISO 8601, UTC
    assert (first["event_id"], first["correlation_id"]) == ("e-1", "c-1")
    assert first["delay"] == 1.5
    assert "event_id" not in after  # cleared with the unit of work


def test_addresses_and_passwords_are_masked_in_values_and_tracebacks() -> None:
    _, lines = logged(
        """
        log.warning(
            "x", error="nats://relay:hunter2@n1:4222 refused",
            nested={"to": ["ann.lee@example.org"]}, reason=ValueError("bo@x.org"),
        )
        try:
            raise RuntimeError("550 <zoë@пример.рф>: mailbox unavailable")
        except RuntimeError:
            log.exception("worker.job_failed")
        """
    )
    text = json.dumps(lines, ensure_ascii=False)
    for secret in ("hunter2", "ann.lee@example.org", "bo@x.org", "zoë@пример.рф"):
        assert secret not in text
    warning, crash = lines
    assert warning["error"] == "nats://relay:***@n1:4222 refused"
    assert warning["nested"] == {"to": ["<e-mail>"]}
    assert "RuntimeError: 550 <<e-mail>>: mailbox unavailable" in crash["exception"]


def test_the_standard_librarys_loggers_come_out_the_same_way() -> None:
    _, [line] = logged(
        """
        with bound_contextvars(request_id="r-1"):
            logging.getLogger("uvicorn.error").error("refused %s", "carl@example.org")
        """
    )
    assert line["event"] == "refused <e-mail>"
    assert (line["logger"], line["role"], line["request_id"]) == (
        "uvicorn.error",
        "relay",
        "r-1",
    )
    assert line["level"] == "error"


def test_a_crash_is_a_log_line_too() -> None:
    _, lines = logged('raise SystemError("died holding ann@example.org")')
    [crash] = lines
    assert crash["event"] == "process.crashed"
    assert crash["level"] == "critical"
    assert "SystemError: died holding <e-mail>" in crash["exception"]


def test_the_console_format_is_for_a_person_and_masks_the_same() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import structlog;"
            "from entrypoints.config.logging_setup import configure_logging;"
            "configure_logging('api', 'console');"
            "structlog.get_logger().warning('hello', to='ann@example.org')",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "hello" in done.stderr
    assert "role=api" in done.stderr
    assert "ann@example.org" not in done.stderr
    assert not done.stderr.lstrip().startswith("{")


def test_the_format_setting_is_checked() -> None:
    assert log_format({}) == "json"
    assert log_format({"CLUB_LOG_FORMAT": " Console "}) == "console"
    with pytest.raises(LogFormatError, match="CLUB_LOG_FORMAT must be one of"):
        log_format({"CLUB_LOG_FORMAT": "xml"})


def test_values_json_cannot_hold_are_logged_as_their_masked_text() -> None:
    assert redacted(("a@b.org", 1, None, True)) == ["<e-mail>", 1, None, True]
    assert redacted(KeyError("x@y.org")) == "'<e-mail>'"
