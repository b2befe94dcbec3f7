"""Passwords never reach a terminal or a log: every URL Club prints passes here."""

from __future__ import annotations

import re
from collections.abc import MutableMapping
from typing import Any

MASK = "***"

# scheme://user:password@ — the password ends at the last "@" before the host, and
# a URL list (NATS cluster) is masked URL by URL.
_URL_PASSWORD = re.compile(r"(?P<head>[a-z][a-z0-9+.-]*://[^:/@\s,]*:)[^\s,/]*@", re.I)
# A NATS URL's user without a password is a token, as secret as a password.
_NATS_TOKEN = re.compile(r"(?P<head>\b(?:nats|tls|ws|wss)://)[^:/@\s,]+@", re.I)
# libpq's keyword form, which a driver error may quote.
_KEYWORD_PASSWORD = re.compile(r"(?P<head>\bpassword\s*=\s*)(?:'[^']*'|\S+)", re.I)


def masked(text: str) -> str:
    """`text` with the password of every URL (and libpq `password=`) replaced."""
    text = _URL_PASSWORD.sub(lambda m: f"{m['head']}{MASK}@", text)
    text = _NATS_TOKEN.sub(lambda m: f"{m['head']}{MASK}@", text)
    return _KEYWORD_PASSWORD.sub(lambda m: f"{m['head']}{MASK}", text)


def mask_log_event(
    _logger: object, _method: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """A structlog processor: an error's text may quote the URL it failed on."""
    for key, value in event.items():
        if isinstance(value, str):
            event[key] = masked(value)
    return event
