"""The `/ops/` page's session: a signed cookie instead of the token, and its CSRF token.

The operator types the token once; the browser then keeps `<id>.<expiry>.<mac>`, an
HMAC-SHA256 over a random id and an expiry, under a key derived from the operator
token. Nothing is stored on the server, so every API process accepts the cookie,
and a new `CLUB_OPERATOR_TOKEN` changes the key: everyone is logged out. The CSRF
token of a session is a second MAC over its id, so a form carries it and a
cross-site page, which cannot read the cookie, cannot forge it
(docs/decisions/2026-11-30-operator-page-session.md).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from urllib.parse import urlsplit

import attrs

COOKIE = "club_ops_session"
COOKIE_PATH = "/ops"
LIFETIME_S = 8 * 3600  # a working day; then the token is asked again
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-club-csrf"


@attrs.frozen
class Session:
    session_id: str
    expires_at: int


def _key(operator_token: str) -> bytes:
    # Derived, never the token itself: a leaked cookie tells nothing of the token.
    return hmac.new(
        operator_token.encode(), b"club-ops-session-v1", hashlib.sha256
    ).digest()


def _mac(operator_token: str, text: str) -> str:
    return hmac.new(_key(operator_token), text.encode(), hashlib.sha256).hexdigest()


def new_session_cookie(
    operator_token: str, *, now: float | None = None, lifetime_s: int = LIFETIME_S
) -> str:
    expires_at = int(now if now is not None else time.time()) + lifetime_s
    session_id = secrets.token_urlsafe(18)  # no dots: the separator stays unique
    body = f"{session_id}.{expires_at}"
    return f"{body}.{_mac(operator_token, body)}"


def valid_session(
    cookie: str | None, operator_token: str, *, now: float | None = None
) -> Session | None:
    """The session the cookie names, if its MAC is the current key's and it has
    not expired; None otherwise (tampered, expired, or signed with an old token)."""
    if not cookie or not operator_token:
        return None
    parts = cookie.split(".")
    if len(parts) != 3 or not parts[1].isdigit():  # noqa: PLR2004 - id.expiry.mac
        return None
    session_id, expiry, mac = parts
    if not hmac.compare_digest(
        mac.encode(), _mac(operator_token, f"{session_id}.{expiry}").encode()
    ):
        return None
    if int(expiry) <= (now if now is not None else time.time()):
        return None
    return Session(session_id, int(expiry))


def csrf_token(operator_token: str, session: Session) -> str:
    return _mac(operator_token, f"csrf.{session.session_id}")


def csrf_matches(offered: str, operator_token: str, session: Session) -> bool:
    return hmac.compare_digest(
        offered.encode(), csrf_token(operator_token, session).encode()
    )


def cross_site(origin: str | None, own: str) -> bool:
    """An Origin header naming another origin than the page's own, or `null` (a
    sandboxed frame, a data: URL). `own` is the configured public origin
    (scheme://host[:port]: both must match), else the Host asked (host[:port]: a
    proxy ending TLS makes the scheme we see differ from the browser's). A missing
    Origin is not cross-site by itself: some same-site requests carry none; the
    CSRF token still has to match."""
    if not origin:
        return False
    if origin == "null":
        return True
    theirs = urlsplit(origin.lower())
    if "://" not in own:
        return theirs.netloc != own.lower()
    ours = urlsplit(own.lower())
    return (theirs.scheme, theirs.netloc) != (ours.scheme, ours.netloc)


def cookie_header(value: str, *, secure: bool, max_age: int = LIFETIME_S) -> str:
    """Set-Cookie for the session: never readable by scripts, never sent cross-site,
    only to `/ops`; `Secure` when the page was asked over https."""
    flags = [
        f"{COOKIE}={value}",
        f"Path={COOKIE_PATH}",
        f"Max-Age={max_age}",
        "HttpOnly",
        "SameSite=Strict",
    ]
    if secure:
        flags.append("Secure")
    return "; ".join(flags)
