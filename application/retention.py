"""How long each store keeps what it holds, and the rule that ties them together.

A business rule, pure: `entrypoints.config.settings` reads the settings into a
`Retention` and refuses a broken tie at start-up; `stream_retention` there turns it
into the broker's stream settings.

Read from CLUB_*_RETENTION (README.md, "Configuration"); a duration always carries
its unit (`7d`, `36h`, `90m`, `600s`), because a bare `7` meaning seven days to one
reader and seven seconds to the stream would drop every event after seven seconds.

The tie (docs/decisions/2026-11-30-retention.md): an inbox row is what tells a
consumer "already applied", so it must outlive every copy of its event the broker
can still hand over. A copy sits in CLUB_EVENTS up to the stream retention; a copy
dead-lettered at the last moment sits in CLUB_DLQ up to the DLQ retention, and once
replayed in CLUB_REPLAY up to that retention again; a relay that dies before saving
its position republishes a little later, which the duplicate window absorbs only
within its own length. An idempotency answer must outlive the key's documented reuse
window (docs/http-api.md §6).
"""

from __future__ import annotations

import math
import re

import attrs

DAY_S = 86_400.0
# docs/http-api.md §6 "Retention": a retry with the same key within this window
# gets the first answer; after it, the key may be forgotten.
KEY_REUSE_WINDOW_S = DAY_S

_UNITS = {"s": 1.0, "m": 60.0, "h": 3_600.0, "d": DAY_S}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")

STREAM = "CLUB_STREAM_RETENTION"
DLQ = "CLUB_DLQ_RETENTION"
INBOX = "CLUB_INBOX_RETENTION"
ANSWERS = "CLUB_ANSWER_RETENTION"
EXPORTS = "CLUB_EXPORT_RETENTION"


class RetentionError(ValueError):
    """A retention is malformed or breaks the tie; the message names the fix."""


@attrs.frozen(kw_only=True)
class Retention:
    """Seconds each store keeps an item, counted from when it was stored."""

    stream_s: float = 7 * DAY_S  # CLUB_EVENTS messages (JetStream max_age)
    dead_letters_s: float = 7 * DAY_S  # CLUB_DLQ entries and CLUB_REPLAY copies
    inbox_s: float = 30 * DAY_S  # a consumer's memory of what it applied
    answers_s: float = 7 * DAY_S  # stored answers to Idempotency-Keys
    exports_s: float = DAY_S  # export files (rosters name people: not for long)

    def redelivery_window_s(self, duplicate_window_s: float) -> float:
        """The longest time after an event was first stored in which a copy of it
        can still reach a consumer: the stream's, then the DLQ's and the replay
        stream's retention, after a republish the duplicate window let through."""
        return self.stream_s + 2 * self.dead_letters_s + duplicate_window_s

    def problem(self, duplicate_window_s: float) -> str | None:
        """One line naming both settings and the fix, or None when they agree."""
        for name, value in ((STREAM, self.stream_s), (DLQ, self.dead_letters_s)):
            if value < duplicate_window_s:
                return (
                    f"{name}={shown(value)} is shorter than the stream's duplicate "
                    f"window ({shown(duplicate_window_s)}), which JetStream refuses; "
                    f"set {name} to at least {shown(duplicate_window_s)}"
                )
        needed = self.redelivery_window_s(duplicate_window_s)
        if self.inbox_s < needed:
            return (
                f"{INBOX}={shown(self.inbox_s)} must outlive every redelivery: "
                f"{STREAM} ({shown(self.stream_s)}) + 2 x {DLQ} "
                f"({shown(self.dead_letters_s)}, the DLQ then its replay) + the "
                f"duplicate window ({shown(duplicate_window_s)}) = {shown(needed)}; "
                f"raise {INBOX} to at least {rounded_up(needed)} or shorten the others"
            )
        if self.answers_s < KEY_REUSE_WINDOW_S:
            return (
                f"{ANSWERS}={shown(self.answers_s)} is shorter than the "
                f"Idempotency-Key reuse window ({shown(KEY_REUSE_WINDOW_S)}, "
                f"docs/http-api.md); set {ANSWERS} to at least "
                f"{shown(KEY_REUSE_WINDOW_S)}"
            )
        return None


# A century: within JetStream's max_age (int64 nanoseconds, ~292 years) and
# Python's datetime arithmetic for the trim's cutoff.
LONGEST_DAYS = 36_500
LONGEST_S = LONGEST_DAYS * 86_400.0


def duration(name: str, raw: str | None, default: float) -> float:
    """`7d`, `36h`, `90m`, `600s` (unset or empty: the default) in seconds."""
    if raw is None or raw.strip() == "":
        return default
    match = _DURATION.match(raw)
    if match is None:
        msg = (
            f"{name}={raw!r} is not a duration; write a number and its unit: "
            "7d, 36h, 90m or 600s"
        )
        raise RetentionError(msg)
    seconds = float(match[1]) * _UNITS[match[2]]
    if seconds <= 0:
        raise RetentionError(f"{name}={raw!r} must be longer than 0")
    if seconds > LONGEST_S:
        msg = (
            f"{name}={raw!r} is longer than {LONGEST_DAYS}d, which the broker's "
            f"max_age (nanoseconds in 64 bits) and a trim's cutoff cannot hold; "
            f"write {LONGEST_DAYS}d or less"
        )
        raise RetentionError(msg)
    return seconds


def shown(seconds: float) -> str:
    """Whole units, largest first: 7d, 36h, 21d 2m, 0.5s."""
    parts, left = [], seconds
    for unit in ("d", "h", "m", "s"):
        count = int(left // _UNITS[unit])
        if count:
            parts.append(f"{count}{unit}")
            left -= count * _UNITS[unit]
    if left or not parts:  # a fraction of a second
        parts.append(f"{left:g}s")
    return " ".join(parts)


def rounded_up(seconds: float) -> str:
    """A setting to write that is at least `seconds`: in its largest whole unit."""
    for unit in ("d", "h", "m"):
        if seconds >= _UNITS[unit]:
            return f"{math.ceil(seconds / _UNITS[unit])}{unit}"
    return f"{math.ceil(seconds)}s"
