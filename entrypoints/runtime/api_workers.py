"""How many API processes `club api` runs (CLUB_API_WORKERS; the lead moves this
into Settings). One process is one core: more share the load of a busy machine."""

from __future__ import annotations

from collections.abc import Mapping

from entrypoints.config.settings import ConfigError

MAX_API_WORKERS = 64  # far past any core count this is meant for: a typo, not a plan


def api_workers(env: Mapping[str, str]) -> int:
    raw = env.get("CLUB_API_WORKERS", "").strip()
    if not raw:
        return 1
    try:
        workers = int(raw)
    except ValueError:
        workers = 0
    if not 1 <= workers <= MAX_API_WORKERS:
        msg = (
            f"CLUB_API_WORKERS={raw!r} is not a process count: "
            f"set a whole number from 1 to {MAX_API_WORKERS} (one per core is usual)"
        )
        raise ConfigError(msg)
    return workers
