"""The environment for one `club` role run as its own process, on given servers."""

from __future__ import annotations

import os


def role_env(database_url: str, nats_url: str, **settings: str) -> dict[str, str]:
    """This machine's environment, less its CLUB_* settings (a developer's shell may
    point at other servers), plus the two servers and `settings` (CLUB_* names)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLUB_")}
    servers = {"CLUB_DATABASE_URL": database_url, "CLUB_NATS_URL": nats_url}
    return env | servers | settings
