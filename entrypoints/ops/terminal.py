"""The operator's terminal: what Club prints there is shown, never interpreted."""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console
from rich.text import Text

# C0 and C1 controls but tab and newline: ESC starts the sequences that move the
# cursor, clear the screen or retitle the window; CSI (0x9b) does on some terminals.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """`text` with each control character written out (`\\x1b`)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


class OperatorConsole(Console):
    """A Rich console for text Club did not write: dead-letter reasons, subjects,
    titles and owners come from events, providers and settings. Drawn as written:
    no markup (a reason holding `[/bold]` made `club dlq list` crash), no `:emoji:`
    codes, control characters shown escaped (an ESC sequence could rewrite the
    operator's screen). Every string a table or print hands Rich passes here."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(markup=False, emoji=False, **kwargs)

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(
            visible(text), **(kwargs | {"markup": False, "emoji": False})
        )
