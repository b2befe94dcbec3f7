"""The stores' retentions and their tie: refused at start-up in one line."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.nats.streams import DUPLICATE_WINDOW_S
from application.retention import (
    DAY_S,
    KEY_REUSE_WINDOW_S,
    Retention,
    RetentionError,
    duration,
    rounded_up,
)
from entrypoints.config.settings import ConfigError, Settings


def test_the_defaults_keep_the_tie() -> None:
    chosen = Settings.from_env({}).retention
    assert chosen == Retention()
    assert chosen.inbox_s >= chosen.redelivery_window_s(DUPLICATE_WINDOW_S)
    assert chosen.answers_s >= KEY_REUSE_WINDOW_S


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [("7d", 7 * DAY_S), ("36h", 36 * 3600), ("90m", 5400), ("600s", 600),
     (" 1.5d ", 1.5 * DAY_S)],
)  # fmt: skip
def test_a_duration_carries_its_unit(raw: str, seconds: float) -> None:
    assert duration("CLUB_INBOX_RETENTION", raw, 1.0) == seconds


@pytest.mark.parametrize("raw", ["7", "7 days", "-1d", "0d", "d", "1w", "1e3s"])
def test_a_duration_without_a_unit_or_not_positive_is_refused(raw: str) -> None:
    with pytest.raises(RetentionError, match="CLUB_STREAM_RETENTION"):
        duration("CLUB_STREAM_RETENTION", raw, 1.0)


@pytest.mark.parametrize("raw", ["36501d", "99999999999999999999d", "876025h"])
def test_a_duration_past_a_century_is_refused_before_it_overflows(raw: str) -> None:
    """The broker keeps max_age as int64 nanoseconds and the trim subtracts it
    from now: a huge retention would fail there, in a loop, not at start-up."""
    with pytest.raises(RetentionError, match="36500d or less"):
        duration("CLUB_STREAM_RETENTION", raw, 1.0)
    assert duration("CLUB_STREAM_RETENTION", "36500d", 1.0) == 36_500 * DAY_S


def test_an_inbox_shorter_than_the_redelivery_window_is_refused_naming_both() -> None:
    with pytest.raises(ConfigError) as refused:
        Settings.from_env(
            {"CLUB_INBOX_RETENTION": "10d", "CLUB_STREAM_RETENTION": "7d"}
        )
    message = str(refused.value)
    assert "\n" not in message
    assert "CLUB_INBOX_RETENTION=10d" in message
    assert "CLUB_STREAM_RETENTION (7d)" in message
    assert "CLUB_DLQ_RETENTION (7d" in message
    # The fix is a value the setting accepts, and it satisfies the rule.
    fix = message.split("at least ")[1].split(" ", maxsplit=1)[0]
    Settings.from_env({"CLUB_INBOX_RETENTION": fix, "CLUB_STREAM_RETENTION": "7d"})


def test_shorter_stream_and_dlq_allow_a_shorter_inbox() -> None:
    shorter = {"CLUB_STREAM_RETENTION": "1d", "CLUB_DLQ_RETENTION": "2d"}
    with pytest.raises(ConfigError):  # 5d < 1d + 2 x 2d + the duplicate window
        Settings.from_env(shorter | {"CLUB_INBOX_RETENTION": "5d"})
    chosen = Settings.from_env(shorter | {"CLUB_INBOX_RETENTION": "6d"}).retention
    assert chosen.inbox_s == 6 * DAY_S


def test_answers_kept_shorter_than_the_key_reuse_window_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"CLUB_ANSWER_RETENTION=12h.*reuse window"):
        Settings.from_env({"CLUB_ANSWER_RETENTION": "12h"})


def test_a_stream_retention_shorter_than_the_duplicate_window_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"CLUB_STREAM_RETENTION=1m.*duplicate"):
        Settings.from_env({"CLUB_STREAM_RETENTION": "60s"})


seconds = st.integers(min_value=1, max_value=400 * 24 * 3600).map(float)


@given(stream=seconds, dlq=seconds, inbox=seconds, answers=seconds)
def test_accepted_means_every_copy_meets_its_inbox_row(
    stream: float, dlq: float, inbox: float, answers: float
) -> None:
    """Whatever the four are, an accepted configuration keeps an inbox row past the
    last moment a copy of its event can arrive, and an answer past the key's window;
    a refused one breaks one of them, said in one line."""
    chosen = Retention(
        stream_s=stream, dead_letters_s=dlq, inbox_s=inbox, answers_s=answers
    )
    problem = chosen.problem(DUPLICATE_WINDOW_S)
    holds = (
        inbox >= stream + 2 * dlq + DUPLICATE_WINDOW_S
        and answers >= KEY_REUSE_WINDOW_S
        and min(stream, dlq) >= DUPLICATE_WINDOW_S
    )
    assert (problem is None) == holds
    if problem is not None:
        assert "\n" not in problem
        assert "CLUB_" in problem


@given(st.floats(min_value=0.001, max_value=1e9, allow_nan=False))
def test_the_suggested_fix_is_never_short(value: float) -> None:
    assert duration("X", rounded_up(value), 1.0) >= value
