"""Passwords never reach a terminal or a log: every URL Club prints passes here
(and every log line, through entrypoints/logging_setup.py)."""

from __future__ import annotations

import re

MASK = "***"

# scheme://user:password@ — the password runs to the last "@" of its URL (an "@",
# "/" or "," in it, not percent-encoded, is still the password); a URL ends at a
# space or where the next of a list (NATS cluster) begins, ",scheme://".
_URL_PASSWORD = re.compile(
    r"(?P<head>[a-z][a-z0-9+.-]*://[^:/@\s,]*:)(?:(?!,[a-z][a-z0-9+.-]*://)\S)*@",
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
