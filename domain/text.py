"""What text Club stores: printable, NFC-normalised, trimmed, bounded in code points.

PostgreSQL `text` and `jsonb` refuse NUL, and UTF-8 cannot carry a lone surrogate;
text that got into the event store with either would jam every read model fed from it.
So the rule is checked where the text enters, and the HTTP schema states it as a
pattern (docs/decisions/2026-11-30-what-text-club-accepts.md).
"""

from __future__ import annotations

import re
import unicodedata

from domain.errors import ControlCharacterError, TextLengthError, UnpairedSurrogateError

# Character classes, written once for Python's `re`, pydantic's Rust regex and
# ECMA-262 (OpenAPI patterns): all three read `\uXXXX` inside brackets.
# C0, DEL and C1 controls, plus the line and paragraph separators: Club's texts are
# single lines, and a control character is never part of a name.
FORBIDDEN = r"\u0000-\u001f\u007f-\u009f\u2028\u2029"
# Python's `str.isspace()` minus what FORBIDDEN already refuses: trimmed at both ends.
WHITESPACE = r"\u0020\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000"
_TRIM = "".join(
    chr(c) for c in (0x20, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x202F, 0x205F, 0x3000)
)

# Some non-blank character, and nothing forbidden anywhere.
SINGLE_LINE_PATTERN = rf"^[{WHITESPACE}]*[^{FORBIDDEN}{WHITESPACE}][^{FORBIDDEN}]*$"
_FORBIDDEN_CHAR = re.compile(f"[{FORBIDDEN}]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def refuse_unstorable(value: str, *, field: str) -> None:
    """Refuse what PostgreSQL or UTF-8 cannot hold, and control characters."""
    if surrogate := _SURROGATE.search(value):
        msg = (
            f"{field} contains an unpaired surrogate U+{ord(surrogate[0]):04X}: "
            "send UTF-8 text (or a \\ud83d\\ude00-style pair in JSON)"
        )
        raise UnpairedSurrogateError(msg)
    if control := _FORBIDDEN_CHAR.search(value):
        msg = (
            f"{field} contains the control character U+{ord(control[0]):04X} "
            f"at position {control.start()}: only printable single-line text is kept"
        )
        raise ControlCharacterError(msg)


def normalised(value: str, *, field: str) -> str:
    """Storable, NFC (one spelling per text), without surrounding whitespace."""
    refuse_unstorable(value, field=field)
    return unicodedata.normalize("NFC", value).strip(_TRIM)


def single_line(value: str, *, field: str, max_length: int) -> str:
    """`value` as Club stores it: NFC, trimmed, 1 to `max_length` code points."""
    text = normalised(value, field=field)
    if not 0 < len(text) <= max_length:
        msg = (
            f"{field} must be 1 to {max_length} characters after trimming and "
            f"NFC normalisation, not {len(text)}"
        )
        raise TextLengthError(msg)
    return text
