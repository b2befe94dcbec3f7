"""The retention rule is the application's; the broker's stream settings come from it
in the configuration, which alone knows the broker."""

from __future__ import annotations

from application.retention import DAY_S, Retention
from entrypoints.config.settings import Settings, stream_retention


def test_the_streams_keep_what_the_settings_say() -> None:
    chosen = Settings.from_env(
        {"CLUB_STREAM_RETENTION": "2d", "CLUB_DLQ_RETENTION": "3d"}
    ).retention
    assert isinstance(chosen, Retention)
    streams = stream_retention(chosen)
    assert (streams.events_s, streams.dead_letters_s) == (2 * DAY_S, 3 * DAY_S)
