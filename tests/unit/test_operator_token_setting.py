"""CLUB_OPERATOR_TOKEN opens /ops: a guessable one is refused at start."""

from __future__ import annotations

import pytest

from entrypoints.config.settings import MIN_OPERATOR_TOKEN, ConfigError, Settings

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "token",
    [
        "admin",
        "x" * (MIN_OPERATOR_TOKEN - 1),
        "a" * 40 + " space",
        "a" * 40 + "\x00",
        "a" * 40 + "\n",
        "ä" * 40,
    ],
)
def test_a_short_or_odd_operator_token_is_refused_with_the_fix(token: str) -> None:
    with pytest.raises(ConfigError) as refused:
        Settings.from_env({"CLUB_OPERATOR_TOKEN": token})
    said = str(refused.value)
    assert f"at least {MIN_OPERATOR_TOKEN} characters" in said
    assert "secrets.token_urlsafe" in said
    assert token not in said  # a refused secret is not echoed


def test_a_long_token_is_kept_and_none_is_generated() -> None:
    token = "k" * MIN_OPERATOR_TOKEN
    assert Settings.from_env({"CLUB_OPERATOR_TOKEN": token}).operator_token == token
    generated = Settings.from_env({}).operator_token
    assert len(generated) >= MIN_OPERATOR_TOKEN
    assert generated != Settings.from_env({}).operator_token
