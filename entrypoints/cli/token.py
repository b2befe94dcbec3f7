"""`club token --sub ID --role ROLE [--ttl 1h]`: a caller's bearer token, signed
with CLUB_AUTH_SECRET (beside `club up`, the one it made), for development and
tests. Only the token is printed, so `TOKEN=$(club token …)` works."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable

from adapters.identity.tokens import sign
from application.identity import Role
from domain.errors import InvalidStudentProfileError
from domain.student import check_student_id
from entrypoints.config.auth_settings import AuthSettingError, signing_secret
from entrypoints.config.settings import ConfigError, Settings

_TTL = re.compile(r"(\d{1,7})([smhd])")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
DEFAULT_TTL_S = 3600
MAX_TTL_S = 30 * 86_400  # a development token, not a credential for ever


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    token = sub.add_parser("token", help="a caller's bearer token (development)")
    token.add_argument("--sub", required=True, type=_subject, help="the caller's id")
    token.add_argument(
        "--role",
        action="append",
        required=True,
        choices=[r.value for r in Role],
        help="a right it holds (repeat for several)",
    )
    token.add_argument(
        "--ttl",
        type=_ttl,
        default=DEFAULT_TTL_S,
        help="how long it is valid: 90s, 30m, 1h, 7d",
    )
    token.set_defaults(run=token_command)


def token_command(settings: Settings, args: argparse.Namespace) -> int:
    token = signed(settings, sub=args.sub, roles=args.role, ttl_s=args.ttl)
    sys.stdout.write(token + "\n")
    return 0


def signed(settings: Settings, *, sub: str, roles: Iterable[str], ttl_s: int) -> str:
    """A development token the API of these settings accepts: signed with
    CLUB_AUTH_SECRET, else the one `club up` made in CLUB_DATA_DIR, for the audience
    and issuer it checks (`club token` and `club demo` both sign with this)."""
    try:
        secret = signing_secret(settings.auth, settings.data_dir)
    except AuthSettingError as e:
        raise ConfigError(str(e)) from None
    return sign(
        secret.encode(),
        sub=sub,
        roles=roles,
        ttl_s=ttl_s,
        audience=settings.auth.audience,
        issuer=settings.auth.issuer or None,
    )


def _subject(raw: str) -> str:
    try:
        return check_student_id(raw)  # the ids the API accepts for a caller
    except InvalidStudentProfileError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _ttl(raw: str) -> int:
    matched = _TTL.fullmatch(raw.strip())
    seconds = int(matched[1]) * _UNIT_S[matched[2]] if matched else 0
    if not 0 < seconds <= MAX_TTL_S:
        msg = f"{raw!r}: give a number and s, m, h or d, at most 30d (e.g. 1h)"
        raise argparse.ArgumentTypeError(msg)
    return seconds
