"""Passwords never reach a terminal or a log: every URL Club prints passes here
(and every log line, through entrypoints/config/logging_setup.py)."""

from __future__ import annotations

import re

MASK = "***"

# scheme://user:password@ — the password runs to the last "@" of its URL (an "@",
# "/" or "," in it, not percent-encoded, is still the password); a URL ends at a
# space or where the next one's "://" begins (a list: a NATS cluster). Both bounds
# keep masking linear in the line: a scheme starts only where a run of scheme
# characters starts, and no password runs past a "://" — else a long run before
# "://", or many "a://x:" in a row, made every log line's masking quadratic.
_URL_PASSWORD = re.compile(
    r"(?P<head>(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://[^:/@\s,]*:)(?:(?!://)\S)*@",
    re.I,
)
# A NATS URL's user without a password is a token, as secret as a password.
_NATS_TOKEN = re.compile(r"(?P<head>\b(?:nats|tls|ws|wss)://)[^:/@\s,]+@", re.I)
# libpq's keyword form, which a driver error may quote.
_KEYWORD_PASSWORD = re.compile(r"(?P<head>\bpassword\s*=\s*)(?:'[^']*'|\S+)", re.I)


def masked(text: str) -> str:
    """`text` with the password of every URL (and libpq `password=`) replaced."""
    text = _URL_PASSWORD.sub(lambda m: f"{m['head']}{MASK}@", text)
    text = _NATS_TOKEN.sub(lambda m: f"{m['head']}{MASK}@", text)
    return _KEYWORD_PASSWORD.sub(lambda m: f"{m['head']}{MASK}", text)
