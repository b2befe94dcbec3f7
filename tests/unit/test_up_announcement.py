"""`club up`'s announcement tells a developer how to get a caller's token."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from application.identity import Role
from entrypoints.cli import token
from entrypoints.cli.main import _parser
from entrypoints.config.settings import Settings
from entrypoints.runtime.supervisor import _announce
from entrypoints.runtime.unprivileged import AS_CALLER

pytestmark = pytest.mark.unit

LEAD = "a caller's token: "


def announced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    settings = Settings.from_env({"CLUB_DATA_DIR": str(tmp_path)})
    _announce(
        settings,
        "postgresql://club:pw@127.0.0.1:5432/club",
        "nats://admin:pw@127.0.0.1:4222",
        [],
        AS_CALLER,
    )
    [line] = [x for x in capsys.readouterr().out.splitlines() if LEAD in x]
    return line


def test_the_command_it_shows_is_one_club_token_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = announced(tmp_path, capsys)
    command = line.split(LEAD, 1)[1].split("  (", 1)[0]
    program, *words = shlex.split(command)
    assert program == "club"
    args = _parser().parse_args(words)  # what `club` itself would make of it
    assert args.run is token.token_command
    assert (args.sub, args.role) == ("ann", [Role.STUDENT.value])


def test_it_names_every_role_and_how_to_send_the_token(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = announced(tmp_path, capsys)
    roles = line.split("(roles: ", 1)[1].split(";", 1)[0]
    assert roles.split(", ") == [r.value for r in Role]
    assert "send it as Authorization: Bearer" in line
