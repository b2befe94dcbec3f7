"""What reaches the operator's terminal is shown as written, never interpreted."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import pytest

from adapters.nats.dlq import DeadLetter
from entrypoints.ops import dlq, trace
from entrypoints.ops.terminal import OperatorConsole, visible

pytestmark = pytest.mark.unit

HOSTILE = "refused [/bold] :smile: [red]x\x1b[2J\x1b]0;owned\x07 \x9b6n"


def _drawn(renderable: object) -> str:
    out = io.StringIO()
    OperatorConsole(file=out, width=400, color_system=None).print(renderable)
    return out.getvalue()


def _dead_letter(reason: str) -> DeadLetter:
    now = datetime.now(UTC)
    return DeadLetter(
        dlq_seq=1,
        consumer="notifications",
        original_subject="club.events.enrollment.EnrollmentConfirmed",
        original_seq=7,
        event_id="e-1",
        reason=reason,
        owner="team-mail [/i]",
        deliveries=5,
        first_failed_at=now,
        last_failed_at=now,
        data=b"{}",
        headers={},
    )


def test_a_reason_with_markup_and_escapes_is_listed_as_written() -> None:
    drawn = _drawn(dlq._table([_dead_letter(HOSTILE)], title="DLQ [/b]"))
    assert "refused [/bold] :smile: [red]x" in drawn
    assert "\\x1b[2J" in drawn
    assert "\\x1b]0;owned\\x07" in drawn
    assert "\\x9b6n" in drawn
    assert "\x1b" not in drawn
    assert "\x07" not in drawn
    assert "\x9b" not in drawn
    assert "DLQ [/b]" in drawn
    assert "team-mail [/i]" in drawn


def test_a_trace_with_a_hostile_export_error_and_owner_is_shown_as_written() -> None:
    shown = {
        "kind": "export",
        "id": "op-1",
        "events": [],
        "saga": None,
        "export": {"status": "failed", "attempts": 2, "error": HOSTILE},
        "next_steps": [
            {"owner": "ops\x1b[31m", "action": "look", "recorded_in": "exports"}
        ],
    }
    drawn = _drawn(trace.render(shown))
    assert "error: refused [/bold]" in drawn
    assert "ops\\x1b[31m must look" in drawn
    assert "\x1b" not in drawn


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("plain", "plain"),
        ("tab\tand\nnewline", "tab\tand\nnewline"),  # layout, kept
        ("nul\x00", "nul\\x00"),
        ("del\x7f", "del\\x7f"),
        ("csi\x9b", "csi\\x9b"),
        ("é ² 日本", "é ² 日本"),  # printable beyond ASCII, kept
    ],
)
def test_visible_writes_out_control_characters_only(raw: str, shown: str) -> None:
    assert visible(raw) == shown
