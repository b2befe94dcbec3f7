"""A setting's mistake is one line naming the fix; a bug is a traceback (#9, 5b)."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from adapters.embedded.process import free_port
from entrypoints.cli import main as cli
from entrypoints.config.masking import masked
from entrypoints.config.settings import ConfigError, Settings
from entrypoints.runtime import preflight
from tests.servers import scratch_dir
from tests.stack import club_env


def club(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "entrypoints.cli", *args],
        env=club_env("", "", **env), capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("name", "value", "fix"),
    [
        ("CLUB_DATABASE_URL", "mysql://u:hunter2@db/club", "postgresql://"),
        ("CLUB_DATABASE_URL", "postgresql://u:hunter2@db:port/club", "postgresql://"),
        ("CLUB_DATABASE_URL", "postgresql://u:hunter2@:5432/club", "postgresql://"),
        ("CLUB_NATS_URL", "http://u:hunter2@nats:4222", "nats://"),
        ("CLUB_NATS_URL", "nats://a:4222,nats://u:hunter2@b:x", "nats://"),
        ("CLUB_HTTP_PORT", "80000", "1 to 65535"),
        ("CLUB_CRASH_AT", "relay.nowhere", "relay.after_read"),
    ],
)
def test_a_bad_setting_is_one_line_that_names_the_fix(
    name: str, value: str, fix: str
) -> None:
    good = {
        "CLUB_DATABASE_URL": "postgresql://club:hunter2@127.0.0.1:1/club",
        "CLUB_NATS_URL": "nats://relay:hunter2@127.0.0.1:1",
    }
    answer = club("migrate", **(good | {name: value}))
    assert answer.returncode == 2, answer.stderr
    lines = answer.stderr.splitlines()
    assert len(lines) == 1, answer.stderr
    assert lines[0].startswith(f"club: {name}")
    assert fix in lines[0]
    assert "hunter2" not in answer.stderr + answer.stdout


@pytest.mark.parametrize(
    ("proxy", "provider"),
    [
        ("HTTPS_PROXY", {"CLUB_EMAIL_PROVIDER_URL": "https://mail.example"}),
        ("HTTP_PROXY", {"CLUB_PAYMENT_PROVIDER_URL": "http://pay.example:8026"}),
    ],
)
def test_a_proxy_a_provider_cannot_use_is_refused_at_start(
    proxy: str, provider: dict[str, str]
) -> None:
    """Found when a role built its client, it was a traceback, and `club up` would
    restart the role for ever; a proxy for this machine's sandboxes is never read."""
    answer = club("migrate", **provider, **{proxy: "socks5://u:hunter2@proxy:1080"})
    assert answer.returncode == 2, answer.stderr
    [line] = answer.stderr.splitlines()
    assert line.startswith(f"club: {proxy} must name a proxy as http://host:port")
    assert next(iter(provider)) in line
    assert "hunter2" not in answer.stderr + answer.stdout


def test_a_bug_inside_a_role_is_a_traceback_not_a_config_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def relay_with_a_bug(*_: object) -> int:
        return int("a ValueError deep inside the relay")

    monkeypatch.setattr(cli, "_relay", relay_with_a_bug)
    with pytest.raises(ValueError, match="deep inside the relay"):
        cli.main(["relay"])


def test_the_url_checks_accept_what_the_drivers_accept() -> None:
    settings = Settings.from_env(
        {
            "CLUB_DATABASE_URL": "postgresql://u:p%40ss@db.example:5433/club",
            "CLUB_NATS_URL": "nats://relay:pw@n1:4222, tls://relay:pw@n2:4222",
        }
    )
    assert settings.database_url is not None
    assert settings.nats_url is not None
    with pytest.raises(ConfigError, match="must start with postgresql://"):
        Settings.from_env({"CLUB_DATABASE_URL": "127.0.0.1:5432/club"})


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://club:s3cr@t@db:5432/club", "postgresql://club:***@db:5432/club"),
        ("postgresql://club@db/club", "postgresql://club@db/club"),
        (
            "nats://relay:pw1@n1:4222,nats://relay:pw2@n2:4222",
            "nats://relay:***@n1:4222,nats://relay:***@n2:4222",
        ),
        ("nats://s3cr3t-token@n1:4222", "nats://***@n1:4222"),
        (  # not percent-encoded: "/" and "," are still the password's
            "smtp+starttls://mailer:s3/cr,et@mail.example.org:587",
            "smtp+starttls://mailer:***@mail.example.org:587",
        ),
        (
            "CLUB_EMAIL_PROVIDER_URL='smtp://u:p/w@h' is not a URL",
            "CLUB_EMAIL_PROVIDER_URL='smtp://u:***@h' is not a URL",
        ),
        (
            "error: host=db password='a b' user=club",
            "error: host=db password=*** user=club",
        ),
    ],
)
def test_masked_hides_every_password_and_token(url: str, shown: str) -> None:
    assert masked(url) == shown


def test_a_roles_log_masks_a_url_an_error_quotes() -> None:
    """Every `club` process logs through the masking processor that main() installs."""
    code = (
        "import structlog, entrypoints.cli.main as cli; cli._mask_passwords_in_logs(); "
        "structlog.get_logger().warning('role.waiting_for_nats', "
        "error='nats://relay:hunter2@n1:4222 refused')"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    logged = out.stdout + out.stderr
    assert "nats://relay:***@n1:4222 refused" in logged
    assert "hunter2" not in logged


def test_club_up_refuses_a_data_dir_it_cannot_use() -> None:
    # scratch dirs, not tmp_path: under root's 700 pytest dir, a club up that did
    # start would put its data in /var/lib/club (see adapters/embedded/placement.py)
    tmp_path = scratch_dir("club-cli-")
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    answer = club("up", CLUB_DATA_DIR=str(a_file / "club"))
    assert answer.returncode == 2, answer.stderr
    [line] = answer.stderr.splitlines()
    assert line.startswith("club: CLUB_DATA_DIR=")
    assert "you may write" in line


def test_a_second_club_up_on_the_same_data_dir_is_refused() -> None:
    tmp_path = scratch_dir("club-cli-")
    held = preflight.claim_data_dir(Settings.from_env({"CLUB_DATA_DIR": str(tmp_path)}))
    try:
        answer = club("up", CLUB_DATA_DIR=str(tmp_path))
    finally:
        preflight.release(held)
    assert answer.returncode == 2, answer.stderr
    [line] = answer.stderr.splitlines()
    assert "another `club up` is using CLUB_DATA_DIR" in line


def test_club_up_refuses_a_taken_http_port() -> None:
    tmp_path = scratch_dir("club-cli-")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        answer = club("up", CLUB_DATA_DIR=str(tmp_path), CLUB_HTTP_PORT=str(port))
    assert answer.returncode == 2, answer.stderr
    [line] = answer.stderr.splitlines()
    assert line.startswith(f"club: CLUB_HTTP_PORT={port} on 127.0.0.1 cannot be used")
    assert not (tmp_path / "postgres").exists()  # refused before starting anything


def test_club_up_names_a_broken_credentials_file() -> None:
    data_dir = scratch_dir("club-cli-")
    (data_dir / "nats").mkdir()
    (data_dir / "nats/credentials.json").write_text('{"relay": 42')
    answer = club("up", CLUB_DATA_DIR=str(data_dir), CLUB_HTTP_PORT=str(free_port()))
    assert answer.returncode == 2, answer.stderr
    assert "credentials.json is not a JSON object" in answer.stderr.splitlines()[-1]
    assert "Traceback" not in answer.stderr
