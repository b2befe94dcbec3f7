"""What waits on a person, in one line each: purchases in review or awaiting a
refund, e-mails whose outcome is unknown, failed exports, dead letters the DLQ is
about to forget. `club status` prints these lines and /ops shows them, both from
the chain's JSON (`chain_status.as_json`), so they cannot disagree."""

from __future__ import annotations

from typing import Any

from application.console_reads import EXPIRING_WITHIN_S
from application.work_lists import STATES, WATCHED
from entrypoints.ops.view import seconds

# The command that lists each kind by state, named in its line.
_OPTION = {"notifications": "--state"}


def attention_lines(shown: dict[str, Any]) -> list[str]:
    """Each watched state that holds something, then each consumer's dead letters
    near the end of the DLQ's retention; none: nothing waits on a person."""
    lines = [work_line(tally) for tally in shown.get("work", []) if tally["count"]]
    lines += [_expiring_line(hop) for hop in shown["dlq"] if hop.get("expiring")]
    return lines


def work_line(tally: dict[str, Any]) -> str:
    kind, count = tally["kind"], tally["count"]
    noun = kind if count != 1 else kind.removesuffix("s")
    oldest = tally["oldest_age_seconds"]
    age = "" if oldest is None else f" (oldest {seconds(oldest)})"
    option = _OPTION.get(kind, "--status")
    return (
        f"{count} {noun} {tally['said']}{age}: "
        f"`club {kind} list {option} {tally['state']}`"
    )


def _expiring_line(hop: dict[str, Any]) -> str:
    consumer, count = hop["consumer"], hop["expiring"]
    letters = "dead letter" if count == 1 else "dead letters"
    return (
        f"{count} {letters} of {consumer} expire within "
        f"{seconds(EXPIRING_WITHIN_S)} (CLUB_DLQ_RETENTION): the DLQ drops them "
        f"unseen; replay or discard them (`club dlq list --consumer {consumer}`)"
    )


def watched_states() -> dict[str, tuple[str, ...]]:
    """Every kind's states, the watched ones first (the page's filter links)."""
    return {
        kind: (*WATCHED[kind], *(s for s in STATES[kind] if s not in WATCHED[kind]))
        for kind in STATES
    }
