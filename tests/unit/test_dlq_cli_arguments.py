"""`club dlq replay|discard` refuse a mistaken command before touching anything:
one line that says what to write instead, exit 2, no traceback."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from application.console_reads import (
    DeadLetter,
    DiscardRequest,
    DlqFilter,
    ReplayRequest,
)
from entrypoints.cli.main import main
from entrypoints.config.settings import ConfigError, Settings

pytestmark = pytest.mark.unit

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _nowhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """No services: a command that got past its arguments would fail differently."""
    monkeypatch.delenv("CLUB_DATABASE_URL", raising=False)
    monkeypatch.delenv("CLUB_NATS_URL", raising=False)
    monkeypatch.setenv("CLUB_DATA_DIR", "/nonexistent/club-unit")


@pytest.mark.parametrize(
    ("argv", "fix"),
    [
        (
            ["dlq", "discard", "--consumer", "notifications", "--all"],
            "say why (--reason TEXT)",
        ),
        (
            ["dlq", "discard", "--consumer", "notifications", "--reason", "spam"],
            "--id EVENT_ID, --because TEXT or --type EventName, or --all",
        ),
        (
            ["dlq", "discard", "--consumer", "notifications", "--all",
             "--type", "EnrollmentConfirmed", "--reason", "spam"],
            "not --all together with those",
        ),
        (
            ["dlq", "replay", "--consumer", "notifications", "--reason", "r",
             "--past-key-lifetime"],
            "name each one you checked with --id EVENT_ID",
        ),
        (
            ["dlq", "replay", "--consumer", "notifications", "--reason", "r",
             "--type", "club.events.enrollment.>"],
            "--type names one event type, like EnrollmentConfirmed",
        ),
        (
            ["dlq", "discard", "--consumer", "notifications", "--reason", "r",
             "--id", " "],
            "--id takes an event id (see `club dlq list`)",
        ),
        (
            ["dlq", "discard", "--consumer", "a.>", "--all", "--reason", "r"],
            "--consumer names one consumer",
        ),
    ],
)  # fmt: skip
def test_a_mistaken_command_says_the_fix(
    argv: list[str], fix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    said = capsys.readouterr().err
    assert said.startswith("club: "), said
    assert fix in said
    assert "Traceback" not in said
    assert said.count("\n") == 1  # one line


def test_the_key_lifetime_is_a_duration_like_the_retentions() -> None:
    assert Settings.from_env({}).email_key_lifetime_s == 86_400
    assert Settings.from_env(
        {"CLUB_EMAIL_KEY_LIFETIME": "36h"}
    ).email_key_lifetime_s == (36 * 3600)
    with pytest.raises(ConfigError, match="CLUB_EMAIL_KEY_LIFETIME='a day'"):
        Settings.from_env({"CLUB_EMAIL_KEY_LIFETIME": "a day"})


def _entry(**changes: object) -> DeadLetter:
    fields: dict[str, object] = {
        "dlq_seq": 1,
        "consumer": "notifications",
        "original_subject": "club.events.enrollment.EnrollmentConfirmed",
        "original_seq": 7,
        "event_id": "e-1",
        "reason": "permanent: provider answered 400",
        "owner": "team-mail",
        "deliveries": 3,
        "first_failed_at": NOW - timedelta(hours=1),
        "last_failed_at": NOW,
        "data": b"{}",
        "headers": {},
    } | changes
    return DeadLetter(**fields)  # type: ignore[arg-type]


def test_a_filter_holds_when_each_of_its_tests_does() -> None:
    entry = _entry()
    assert DlqFilter().matches(entry)
    assert DlqFilter(because="Provider ANSWERED").matches(entry)
    assert not DlqFilter(because="timeout").matches(entry)
    assert DlqFilter(event_type="EnrollmentConfirmed").matches(entry)
    assert not DlqFilter(event_type="Enrollment").matches(entry)
    assert DlqFilter(event_ids=frozenset({"e-1", "e-2"})).matches(entry)
    assert not DlqFilter(event_ids=frozenset({"e-2"}), because="400").matches(entry)


def test_only_the_notifications_past_the_key_lifetime_are_held_back() -> None:
    old = _entry(first_failed_at=NOW - timedelta(hours=25))
    unrecorded = _entry(first_failed_at=None, last_failed_at=NOW - timedelta(days=2))
    fresh = _entry()
    request = ReplayRequest(consumer="notifications", operator="o", reason="r")
    assert [request.held_back(e, NOW) for e in (old, unrecorded, fresh)] == [
        True, True, False,
    ]  # fmt: skip
    anyway = ReplayRequest(
        consumer="notifications", operator="o", reason="r",
        only=DlqFilter(event_ids=frozenset({"e-1"})), past_key_lifetime=True,
    )  # fmt: skip
    assert not anyway.held_back(old, NOW)
    rosters = ReplayRequest(consumer="rosters", operator="o", reason="r")
    assert not rosters.held_back(old, NOW)


def test_a_discard_says_which_and_why() -> None:
    with pytest.raises(ValueError, match="say why"):
        DiscardRequest(consumer="c", operator="o", reason=" ", everything=True)
    DiscardRequest(consumer="c", operator="o", reason="r", everything=True)
