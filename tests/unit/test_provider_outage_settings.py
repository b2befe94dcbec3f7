"""CLUB_NOTIFY_GIVE_UP_AFTER and the circuit's settings: read, defaulted, and a bad
one refused at start with a line that names the fix."""

from __future__ import annotations

import pytest

from entrypoints.config.settings import ConfigError, Settings

pytestmark = pytest.mark.unit


def test_the_defaults_give_up_at_half_the_key_lifetime() -> None:
    outage = Settings.from_env({}).outage
    assert outage.give_up_after_s == 12 * 3600
    assert outage.circuit.failures_to_open == 5
    assert outage.circuit.probe_every_s == 10


def test_a_duration_and_the_circuit_knobs_are_read() -> None:
    outage = Settings.from_env(
        {
            "CLUB_NOTIFY_GIVE_UP_AFTER": "90m",
            "CLUB_NOTIFY_CIRCUIT_FAILURES": "3",
            "CLUB_NOTIFY_PROBE_SECONDS": "0.5",
        }
    ).outage
    assert outage.give_up_after_s == 90 * 60
    assert outage.circuit.failures_to_open == 3
    assert outage.circuit.probe_every_s == 0.5


def test_giving_up_at_or_past_the_key_lifetime_is_refused() -> None:
    with pytest.raises(
        ConfigError, match="must be shorter than CLUB_EMAIL_KEY_LIFETIME"
    ):
        Settings.from_env({"CLUB_NOTIFY_GIVE_UP_AFTER": "24h"})
    with pytest.raises(ConfigError, match="send the e-mail twice"):
        Settings.from_env(
            {"CLUB_NOTIFY_GIVE_UP_AFTER": "6h", "CLUB_EMAIL_KEY_LIFETIME": "6h"}
        )


@pytest.mark.parametrize(
    ("name", "raw", "said"),
    [
        ("CLUB_NOTIFY_GIVE_UP_AFTER", "12", "write a number and its unit"),
        ("CLUB_NOTIFY_CIRCUIT_FAILURES", "0", "a whole number above 0"),
        ("CLUB_NOTIFY_CIRCUIT_FAILURES", "2.5", "a whole number above 0"),
        ("CLUB_NOTIFY_PROBE_SECONDS", "soon", "is not a number"),
        ("CLUB_NOTIFY_PROBE_SECONDS", "inf", "a number above 0"),
    ],
)
def test_a_bad_value_names_the_setting(name: str, raw: str, said: str) -> None:
    with pytest.raises(ConfigError, match=said) as refused:
        Settings.from_env({name: raw})
    assert name in str(refused.value)
