"""How callers prove who they are (contract §4.1): CLUB_AUTH_* read and checked."""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

import attrs

from adapters.embedded.credentials import write_private
from adapters.identity.tokens import MIN_SECRET_BYTES

SECRET_FILE = Path("auth") / "secret"  # under CLUB_DATA_DIR, made by `club up`


class AuthSettingError(ValueError):
    """A CLUB_AUTH_* setting is malformed; the message says how to fix it."""


@attrs.frozen(kw_only=True)
class AuthSettings:
    secret: str = ""  # CLUB_AUTH_SECRET: HS256 tokens
    jwks_url: str = ""  # CLUB_AUTH_JWKS_URL: an identity provider's keys
    audience: str = "club"
    issuer: str = ""  # "" checks no issuer

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> AuthSettings:
        settings = cls(
            secret=env.get("CLUB_AUTH_SECRET", ""),
            jwks_url=env.get("CLUB_AUTH_JWKS_URL", ""),
            audience=env.get("CLUB_AUTH_AUDIENCE") or "club",
            issuer=env.get("CLUB_AUTH_ISSUER", ""),
        )
        settings.check()
        return settings

    @property
    def configured(self) -> bool:
        return bool(self.secret or self.jwks_url)

    def check(self) -> None:
        if self.secret and self.jwks_url:
            msg = "set CLUB_AUTH_SECRET or CLUB_AUTH_JWKS_URL, not both"
            raise AuthSettingError(msg)
        if self.secret and len(self.secret.encode()) < MIN_SECRET_BYTES:
            msg = (
                f"CLUB_AUTH_SECRET must be at least {MIN_SECRET_BYTES} bytes; make one "
                "with `python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
            )
            raise AuthSettingError(msg)
        if self.jwks_url and urlsplit(self.jwks_url).scheme not in ("https", "http"):
            msg = "CLUB_AUTH_JWKS_URL must be the issuer's https:// JWKS address"
            raise AuthSettingError(msg)


def secret_file(data_dir: Path) -> Path:
    return data_dir / SECRET_FILE


def kept_secret(data_dir: Path) -> str:
    """The HS256 secret `club up` signs development tokens with: generated once
    into the data directory (mode 600), the same on every later run."""
    path = secret_file(data_dir)
    try:
        if not path.exists() and not path.is_symlink():
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            write_private(path, secrets.token_urlsafe(32) + "\n")
        _keep_private(path)
    except OSError as e:
        msg = f"cannot keep the auth secret at {path}: {e.strerror or e}"
        raise AuthSettingError(msg) from None
    return _read_secret(path)


def _keep_private(path: Path) -> None:
    """Tightens one copied or written by hand — it signs anyone's admin token —
    but only our own regular file: never a link's target, never another user's."""
    for place, mode in ((path.parent, 0o700), (path, 0o600)):
        found = place.lstat()
        if stat.S_ISLNK(found.st_mode):
            msg = f"{place} is a symbolic link; the auth secret must be a plain file"
            raise AuthSettingError(msg)
        if stat.S_IMODE(found.st_mode) & ~mode and found.st_uid == os.getuid():
            place.chmod(mode)


def signing_secret(auth: AuthSettings, data_dir: Path) -> str:
    """What `club token` signs with: CLUB_AUTH_SECRET, else the one `club up`
    made; refused (with the fix) when tokens come from an identity provider."""
    if auth.jwks_url:
        msg = "CLUB_AUTH_JWKS_URL is set: tokens come from that identity provider"
        raise AuthSettingError(msg)
    if auth.secret:
        return auth.secret
    path = secret_file(data_dir)
    if not path.exists():
        msg = (
            f"no signing secret: set CLUB_AUTH_SECRET, or run `club up` once with "
            f"this CLUB_DATA_DIR (it makes {path})"
        )
        raise AuthSettingError(msg)
    return _read_secret(path)


def _read_secret(path: Path) -> str:
    """A kept secret too short for HS256 would fail every role at start (and
    `club up` restart them for ever): refused here, with the fix."""
    try:
        secret = path.read_text().strip()
    except (OSError, UnicodeError) as e:
        msg = f"cannot read the auth secret at {path} ({e}); delete it for a new one"
        raise AuthSettingError(msg) from None
    if len(secret.encode()) < MIN_SECRET_BYTES:
        msg = (
            f"{path} must hold a secret of at least {MIN_SECRET_BYTES} bytes "
            "(HS256); delete it to have a new one generated, or set CLUB_AUTH_SECRET"
        )
        raise AuthSettingError(msg)
    return secret
