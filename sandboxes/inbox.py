"""The sandbox's HTML inbox, as Mailpit shows one: newest first, each message readable.

Every value is attacker text (a student's name ends up in a subject), so each one
is escaped, and the page forbids scripts outright as a second fence.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from html import escape

from sandboxes.store import StoredMessage

HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
    "X-Content-Type-Options": "nosniff",
}
STYLE = (
    "body{font-family:sans-serif;max-width:60em;margin:auto}"
    "article{border-bottom:1px solid #ccc;padding:.5em 0}"
    "pre{white-space:pre-wrap}small{color:#666}"
)


def render(messages: Sequence[StoredMessage], total: int) -> str:
    items = "\n".join(_article(m) for m in messages) or "<p>No messages yet.</p>"
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        "<meta http-equiv='refresh' content='5'>"  # a newcomer sees mail arrive
        f"<title>Club e-mail sandbox ({total})</title><style>{STYLE}</style></head>"
        f"<body><h1>Club e-mail sandbox</h1><p>{total} accepted, newest first; "
        f"showing {len(messages)}. JSON: <a href='/messages'>/messages</a>, "
        f"knobs: <a href='/knobs'>/knobs</a>.</p>\n{items}</body></html>"
    )


def _article(message: StoredMessage) -> str:
    at = datetime.fromtimestamp(message.accepted_at, UTC).isoformat(timespec="seconds")
    return (
        f"<article><h2>{escape(message.subject) or '(no subject)'}</h2>"
        f"<p>To: {escape(message.recipient)}<br><small>{escape(at)} · "
        f"key {escape(message.idempotency_key)} · {escape(message.id)}</small></p>"
        f"<pre>{escape(message.body)}</pre></article>"
    )
