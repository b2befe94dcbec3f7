"""`python -m entrypoints.runtime.probe`: a health check for a role with no HTTP port.

A relay, projector, worker or saga container (docker-compose.yml) is healthy when it
reaches PostgreSQL and the broker with its own credentials (CLUB_DATABASE_URL,
CLUB_NATS_URL): the two things it cannot work without, and the two a wrong setting
breaks. Exit 0, or 1 with each reason on stderr (passwords masked).
"""

from __future__ import annotations

import asyncio
import os
import sys

import nats.errors
import psycopg

from adapters.nats.streams import CredentialsRefusedError, connect
from entrypoints.config.masking import masked
from entrypoints.config.settings import ConfigError, Settings

TIMEOUT_S = 3.0  # inside the compose health check's own timeout


def main() -> int:
    try:
        database_url, nats_url = Settings.from_env(os.environ).require_services()
    except ConfigError as e:
        return _unhealthy([str(e)])
    problems = [
        problem
        for problem in (
            _database_problem(database_url),
            asyncio.run(_broker_problem(nats_url)),
        )
        if problem
    ]
    return _unhealthy(problems) if problems else 0


def _database_problem(url: str) -> str | None:
    try:
        with psycopg.connect(url, connect_timeout=int(TIMEOUT_S)) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as e:
        return f"PostgreSQL at CLUB_DATABASE_URL: {e}"
    return None


async def _broker_problem(url: str) -> str | None:
    try:
        nc = await asyncio.wait_for(connect(url, name="club-probe"), TIMEOUT_S)
    except CredentialsRefusedError:
        return "NATS refused the user and password in CLUB_NATS_URL"
    except (TimeoutError, nats.errors.Error, OSError) as e:
        return f"no NATS server in CLUB_NATS_URL answered within {TIMEOUT_S}s ({e!r})"
    try:
        await nc.flush(timeout=int(TIMEOUT_S))
    except nats.errors.Error as e:
        return f"NATS in CLUB_NATS_URL stopped answering: {e!r}"
    finally:
        await nc.close()
    return None


def _unhealthy(problems: list[str]) -> int:
    for problem in problems:
        print(f"club probe: {masked(problem)}", file=sys.stderr)  # noqa: T201
    return 1


if __name__ == "__main__":
    sys.exit(main())
