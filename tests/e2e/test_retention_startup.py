"""Start-up refuses retentions that break their tie: exit 2, one line naming both
settings and the fix, before any server is touched."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.servers import scratch_dir
from tests.stack import club_env

# Servers that do not exist: the refusal must come before any connection.
NOWHERE = {
    "CLUB_DATABASE_URL": "postgresql://club:pw@127.0.0.1:1/club",
    "CLUB_NATS_URL": "nats://127.0.0.1:1",
}


def club(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "entrypoints.cli", *args],
        env=club_env("", "", **(NOWHERE | env)), capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip


@pytest.mark.parametrize(
    "argv",
    [("relay",), ("projector", "statistics"), ("worker", "notifications"),
     ("api",), ("saga",), ("trim",), ("trim", "--once"), ("migrate",), ("up",)],
)  # fmt: skip
def test_an_inbox_shorter_than_the_stream_stops_every_role_at_start(
    argv: tuple[str, ...],
) -> None:
    answer = club(
        *argv,
        CLUB_STREAM_RETENTION="14d",
        CLUB_INBOX_RETENTION="14d",
        CLUB_DATA_DIR=str(scratch_dir("club-retention-up-")),
    )
    assert answer.returncode == 2, answer.stderr
    lines = answer.stderr.splitlines()
    assert len(lines) == 1, answer.stderr
    assert lines[0].startswith("club: CLUB_INBOX_RETENTION=14d must outlive")
    assert "CLUB_STREAM_RETENTION (14d)" in lines[0]
    assert "raise CLUB_INBOX_RETENTION to at least 29d" in lines[0]
    assert answer.stdout == ""


def test_a_retention_without_its_unit_is_refused() -> None:
    answer = club("trim", "--once", CLUB_EXPORT_RETENTION="24")
    assert answer.returncode == 2
    assert answer.stderr.strip() == (
        "club: CLUB_EXPORT_RETENTION='24' is not a duration; write a number and its "
        "unit: 7d, 36h, 90m or 600s"
    )


def test_a_consistent_configuration_gets_past_the_check() -> None:
    """The same command with the tie kept fails later, on the absent database —
    so the refusal above was the rule's, not any start-up failure's."""
    answer = club(
        "trim", "--once", CLUB_STREAM_RETENTION="14d", CLUB_INBOX_RETENTION="29d"
    )
    assert answer.returncode != 0
    assert "RETENTION" not in answer.stderr
