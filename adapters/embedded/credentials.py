"""Generated passwords for the embedded broker's users, kept in one mode-600 file."""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterable
from pathlib import Path


class CredentialsFileError(ValueError):
    """The credentials file is not what we wrote; the message says how to recover."""


def load_or_create(path: Path, users: Iterable[str]) -> dict[str, str]:
    """Each user's password: kept across runs (a separately started role keeps
    working), generated for a user seen for the first time."""
    known = _read(path) if path.exists() else {}
    wanted = {user: known.get(user) or secrets.token_urlsafe(24) for user in users}
    if wanted != known:
        write_private(path, json.dumps(wanted, indent=2) + "\n")
    path.chmod(0o600)  # also tightens a file an older version left readable
    return wanted


def write_private(path: Path, text: str) -> None:
    """Mode 600 from the first byte: never readable by others, not even for a moment."""
    partial = path.with_name(f".{path.name}.partial")
    partial.unlink(missing_ok=True)
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    partial.replace(path)


def _read(path: Path) -> dict[str, str]:
    try:
        known = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError):
        known = None
    if not isinstance(known, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v for k, v in known.items()
    ):
        msg = (
            f"{path} is not a JSON object of user names to passwords; fix it, or "
            "delete it to have new passwords generated (roles started by hand then "
            "need their new CLUB_NATS_URL)"
        )
        raise CredentialsFileError(msg)
    return known
