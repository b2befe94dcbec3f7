"""The embedded PostgreSQL lets in only who has its password, over TCP or socket."""

from __future__ import annotations

import stat
from collections.abc import Iterator

import psycopg
import pytest

from adapters.embedded.postgres import EmbeddedPostgres
from adapters.embedded.scratch import scratch_dir

TRUSTING_HBA = "local all all trust\nhost all all 127.0.0.1/32 trust\n"


@pytest.fixture
def server() -> Iterator[EmbeddedPostgres]:
    pg = EmbeddedPostgres(scratch_dir("club-pg-password-") / "pg", durable=False)
    pg.start()
    try:
        yield pg
    finally:
        pg.stop()


def _refused_without_password(pg: EmbeddedPostgres) -> None:
    """A local process with no password: over TCP, and over the server's socket."""
    for where in (
        f"postgresql://postgres@127.0.0.1:{pg.port}/postgres",
        f"postgresql://postgres@/postgres?host={pg.root}&port={pg.port}",
    ):
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(where, connect_timeout=5).close()


def test_only_the_generated_password_lets_a_client_in(server: EmbeddedPostgres) -> None:
    _refused_without_password(server)
    wrong = server.url.replace(server.password(), "guessed", 1)
    with pytest.raises(psycopg.OperationalError, match="password"):
        psycopg.connect(wrong, connect_timeout=5).close()
    with psycopg.connect(server.url) as conn:
        assert conn.execute("SELECT current_user").fetchone() == ("postgres",)
    assert stat.S_IMODE(server.password_file.stat().st_mode) == 0o600
    assert len(server.password()) >= 32


def test_a_data_directory_left_trusting_is_closed_on_its_next_start(
    server: EmbeddedPostgres,
) -> None:
    server.stop()
    with (server.pgdata / "pg_hba.conf").open("w") as out:  # as an older Club made it
        out.write(TRUSTING_HBA)
    server.start()
    _refused_without_password(server)
    with psycopg.connect(server.url) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    server.stop()
    server.start()  # and it stays closed across restarts
    _refused_without_password(server)
