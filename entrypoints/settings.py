"""CLUB_* configuration (CONTRACT §2), read once at start-up."""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path

import attrs


class ConfigError(ValueError):
    """A setting is malformed; the message says which and how to fix it."""


@attrs.frozen(kw_only=True)
class Settings:
    database_url: str | None  # None: start an embedded server
    nats_url: str | None
    data_dir: Path
    http_host: str
    http_port: int
    operator_token: str
    hold_seconds: int
    # Tuning, mostly for tests that need faults to resolve quickly:
    relay_lease_seconds: float
    ack_wait_seconds: float
    idempotency_lease_seconds: float
    request_deadline_seconds: float

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        return cls(
            database_url=env.get("CLUB_DATABASE_URL") or None,
            nats_url=env.get("CLUB_NATS_URL") or None,
            data_dir=Path(env.get("CLUB_DATA_DIR", ".club")).absolute(),
            http_host=env.get("CLUB_HTTP_HOST", "127.0.0.1"),
            http_port=_int(env, "CLUB_HTTP_PORT", 8000),
            operator_token=env.get("CLUB_OPERATOR_TOKEN") or secrets.token_urlsafe(24),
            hold_seconds=_int(env, "CLUB_HOLD_SECONDS", 900),
            relay_lease_seconds=_number(env, "CLUB_RELAY_LEASE_SECONDS", 10),
            ack_wait_seconds=_number(env, "CLUB_ACK_WAIT_SECONDS", 30),
            idempotency_lease_seconds=_number(
                env, "CLUB_IDEMPOTENCY_LEASE_SECONDS", 10
            ),
            request_deadline_seconds=_number(env, "CLUB_REQUEST_DEADLINE_SECONDS", 5),
        )

    def require_services(self) -> tuple[str, str]:
        """A single role needs real URLs; only `club up` starts embedded servers."""
        if not self.database_url or not self.nats_url:
            msg = (
                "set CLUB_DATABASE_URL and CLUB_NATS_URL for a single role, "
                "or run `club up` to start embedded servers and every role"
            )
            raise ConfigError(msg)
        return self.database_url, self.nats_url


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a whole number") from None


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number of seconds") from None
    if value <= 0:
        raise ConfigError(f"{name}={raw!r} must be more than 0 seconds")
    return value
