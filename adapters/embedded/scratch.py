"""Throwaway places for a run: a scratch directory, a fresh database on a server.

The tests and the benchmarks both start embedded servers in these; each run gets its
own, and nothing is left behind unless CLUB_KEEP_SCRATCH asks for the logs.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit
from uuid import uuid4

import psycopg
from psycopg import sql


def scratch_dir(prefix: str) -> Path:
    """A temp dir that the embedded PostgreSQL (run as nobody under root) can reach;
    removed when the process exits, so runs do not fill the disk."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(0o755)
    if not os.environ.get("CLUB_KEEP_SCRATCH"):  # keep logs to read after a failure
        atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


@contextmanager
def fresh_database(server_url: str, prefix: str = "club_test_") -> Iterator[str]:
    """A new, empty database on the server at `server_url`; dropped on the way out
    (connections still open to it are ended first)."""
    name = f"{prefix}{uuid4().hex[:12]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield urlunsplit(urlsplit(server_url)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                    sql.Identifier(name)
                )
            )
