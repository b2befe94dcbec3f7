"""`club up`'s checks before it starts anything: each failure is a setting to fix,
said in one line, instead of a server's traceback or a role restarted for ever."""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
from typing import IO

from entrypoints.config.auth_settings import AuthSettingError, kept_secret
from entrypoints.config.settings import ConfigError, Settings

LOCK_NAME = "club-up.lock"


def claim_data_dir(settings: Settings) -> IO[str]:
    """One `club up` per data directory: a second would fight the first for the
    embedded servers' files. The lock lasts as long as the returned file is open
    (and the process: the kernel drops it when we die)."""
    try:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        lock = (settings.data_dir / LOCK_NAME).open("a+")
    except OSError as e:
        msg = (
            f"CLUB_DATA_DIR={str(settings.data_dir)!r} cannot be used ({e.strerror}); "
            "set CLUB_DATA_DIR to a directory you may write"
        )
        raise ConfigError(msg) from None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        msg = (
            f"another `club up` is using CLUB_DATA_DIR={str(settings.data_dir)!r}; "
            "stop it first, or set CLUB_DATA_DIR to another directory"
        )
        raise ConfigError(msg) from None
    lock.seek(0)
    lock.truncate()
    lock.write(f"{os.getpid()}\n")  # for a human wondering who holds it
    lock.flush()
    return lock


def check_http_port_free(settings: Settings) -> None:
    """The API would otherwise crash and be restarted for ever on a taken port."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((settings.http_host, settings.http_port))
        except OSError as e:
            msg = (
                f"CLUB_HTTP_PORT={settings.http_port} on {settings.http_host} cannot "
                f"be used ({e.strerror}); stop what listens there or set "
                "CLUB_HTTP_PORT (and CLUB_HTTP_HOST)"
            )
            raise ConfigError(msg) from None


def check_kept_secret(settings: Settings) -> None:
    """Without CLUB_AUTH_SECRET or CLUB_AUTH_JWKS_URL the roles verify callers'
    tokens with the secret kept in CLUB_DATA_DIR: made here, or a broken one named,
    before anything starts (config/auth_settings.py)."""
    if settings.auth.configured:
        return
    try:
        kept_secret(settings.data_dir)
    except AuthSettingError as e:
        raise ConfigError(str(e)) from None


def release(lock: IO[str]) -> None:
    with contextlib.suppress(OSError):
        lock.close()
