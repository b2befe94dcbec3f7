"""The health check of a role without an HTTP port (docker-compose.yml's relays,
projectors, workers and saga): healthy only when PostgreSQL and the broker answer
with the role's own credentials, and each problem said in one line."""

from __future__ import annotations

import subprocess
import sys

from adapters.embedded.nats import EmbeddedNats
from adapters.embedded.process import free_port
from tests.stack import club_env


def probe(database_url: str, nats_url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "entrypoints.runtime.probe"],
        env=club_env(database_url, nats_url), capture_output=True, text=True,
        timeout=30, check=False,
    )  # fmt: skip


def assert_named_unhealthy(
    answer: subprocess.CompletedProcess[str], named: str
) -> None:
    """Unhealthy, the cause said in a line, and never the password in the URL."""
    assert answer.returncode == 1
    assert named in answer.stderr
    assert "secret-pw" not in answer.stderr


def test_healthy_when_both_answer(database_url: str, nats_url: str) -> None:
    answer = probe(database_url, nats_url)
    assert (answer.returncode, answer.stderr) == (0, "")


def test_a_broker_that_does_not_answer_is_named(database_url: str) -> None:
    nowhere = f"nats://relay:secret-pw@127.0.0.1:{free_port()}"
    named = "no NATS server in CLUB_NATS_URL answered"
    assert_named_unhealthy(probe(database_url, nowhere), named)


def test_a_database_that_does_not_answer_is_named(nats_url: str) -> None:
    nowhere = f"postgresql://postgres:secret-pw@127.0.0.1:{free_port()}/club"
    assert_named_unhealthy(probe(nowhere, nats_url), "PostgreSQL at CLUB_DATABASE_URL")


def test_a_role_with_its_own_credentials_is_healthy(
    database_url: str, guarded_nats: EmbeddedNats
) -> None:
    answer = probe(database_url, guarded_nats.url_for("consumer-statistics"))
    assert (answer.returncode, answer.stderr) == (0, "")


def test_refused_credentials_are_named(
    database_url: str, guarded_nats: EmbeddedNats
) -> None:
    wrong = f"nats://relay:secret-pw@127.0.0.1:{guarded_nats.port}"
    named = "NATS refused the user and password in CLUB_NATS_URL"
    assert_named_unhealthy(probe(database_url, wrong), named)


def test_missing_settings_are_named() -> None:
    answer = subprocess.run(
        [sys.executable, "-m", "entrypoints.runtime.probe"],
        env=club_env("", ""), capture_output=True, text=True, timeout=30,
        check=False,
    )  # fmt: skip
    assert answer.returncode == 1
    assert "set CLUB_DATABASE_URL and CLUB_NATS_URL" in answer.stderr
