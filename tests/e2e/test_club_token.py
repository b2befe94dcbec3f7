"""`club token`, run as a developer runs it: a token the API's verifier accepts,
or one line that says what to do (exit 2)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import jwt
import pytest

from adapters.identity.tokens import MIN_SECRET_BYTES, InvalidTokenError
from application.identity import Caller, Role
from entrypoints.config.auth_settings import kept_secret, secret_file
from entrypoints.config.settings import Settings
from entrypoints.runtime.bootstrap import token_verifier

CLUB = Path(sys.executable).with_name("club")  # the installed script, as in README
SECRET = "club-token-test-secret-0123456789abcdef"  # noqa: S105 - tests only


def env_of(data_dir: Path, **settings: str) -> dict[str, str]:
    """This machine's environment less its CLUB_* settings, plus `settings`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLUB_")}
    return env | {"CLUB_DATA_DIR": str(data_dir)} | settings


def club_token(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLUB), "token", *args],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def printed_token(answer: subprocess.CompletedProcess[str]) -> str:
    assert answer.returncode == 0, answer.stderr
    [token] = answer.stdout.splitlines()  # only the token: TOKEN=$(club token …)
    return token


def lifetime(token: str) -> int:
    claims = jwt.decode(token, options={"verify_signature": False})
    return int(claims["exp"]) - int(claims["iat"])


def test_beside_club_up_it_signs_with_the_kept_secret_the_api_verifies_with(
    tmp_path: Path,
) -> None:
    secret = kept_secret(tmp_path)  # what `club up` makes and hands to the API
    token = printed_token(
        club_token(env_of(tmp_path), "--sub", "ann", "--role", "student")
    )
    api = token_verifier(Settings.from_env({"CLUB_AUTH_SECRET": secret}))
    assert api.caller(token) == Caller(sub="ann", roles=frozenset({Role.STUDENT}))
    assert lifetime(token) == 3600  # --ttl's default, 1h


def test_it_signs_with_club_auth_secret_for_the_configured_audience_and_issuer(
    tmp_path: Path,
) -> None:
    kept = kept_secret(tmp_path)  # there, but CLUB_AUTH_SECRET comes first
    settings = {
        "CLUB_AUTH_SECRET": SECRET,
        "CLUB_AUTH_AUDIENCE": "club-staging",
        "CLUB_AUTH_ISSUER": "https://id.example.org/realms/club",
    }
    token = printed_token(
        club_token(
            env_of(tmp_path, **settings),
            *("--sub", "tess", "--role", "teacher", "--role", "admin", "--ttl", "90s"),
        )
    )
    api = token_verifier(Settings.from_env(settings))
    assert api.caller(token) == Caller(
        sub="tess", roles=frozenset({Role.TEACHER, Role.ADMIN})
    )
    assert lifetime(token) == 90
    with pytest.raises(InvalidTokenError):  # not signed with the kept secret
        token_verifier(Settings.from_env(settings | {"CLUB_AUTH_SECRET": kept})).caller(
            token
        )


def test_without_a_secret_it_says_to_set_one_or_run_club_up(tmp_path: Path) -> None:
    answer = club_token(env_of(tmp_path), "--sub", "ann", "--role", "student")
    assert answer.returncode == 2, answer.stderr
    assert answer.stdout == ""
    [line] = answer.stderr.splitlines()
    assert line == (
        "club: no signing secret: set CLUB_AUTH_SECRET, or run `club up` once with "
        f"this CLUB_DATA_DIR (it makes {secret_file(tmp_path)})"
    )
    assert not secret_file(tmp_path).exists()


def test_with_an_identity_provider_it_says_tokens_come_from_there(
    tmp_path: Path,
) -> None:
    kept_secret(tmp_path)  # a secret from an earlier `club up` is not used
    env = env_of(tmp_path, CLUB_AUTH_JWKS_URL="https://id.example.org/jwks")
    answer = club_token(env, "--sub", "ann", "--role", "student")
    assert answer.returncode == 2, answer.stderr
    assert answer.stdout == ""
    [line] = answer.stderr.splitlines()
    assert line == (
        "club: CLUB_AUTH_JWKS_URL is set: tokens come from that identity provider"
    )


def test_a_kept_secret_too_short_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    path = secret_file(tmp_path)
    path.parent.mkdir(mode=0o700)
    path.write_text("too-short\n")
    answer = club_token(env_of(tmp_path), "--sub", "ann", "--role", "student")
    assert answer.returncode == 2, answer.stderr
    assert answer.stdout == ""
    [line] = answer.stderr.splitlines()
    assert line.startswith(f"club: {path} ")
    assert f"at least {MIN_SECRET_BYTES} bytes" in line
    assert "delete it" in line


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--sub", "ann smith", "--role", "student"), "argument --sub: student_id"),
        (("--sub", "a" * 65, "--role", "student"), "argument --sub: student_id"),
        (("--sub", "ann/../bob", "--role", "admin"), "argument --sub: student_id"),
        (("--sub", "ann", "--role", "superuser"), "invalid choice: 'superuser'"),
        (("--sub", "ann", "--role", "Admin"), "invalid choice: 'Admin'"),
        (("--sub", "ann",), "the following arguments are required: --role"),
        (("--role", "student",), "the following arguments are required: --sub"),
        (("--sub", "ann", "--role", "student", "--ttl", "31d"), "at most 30d"),
    ],
)  # fmt: skip
def test_a_bad_sub_role_or_ttl_is_refused_and_nothing_is_signed(
    tmp_path: Path, args: tuple[str, ...], said: str
) -> None:
    answer = club_token(env_of(tmp_path, CLUB_AUTH_SECRET=SECRET), *args)
    assert answer.returncode == 2, answer.stderr
    assert answer.stdout == ""
    assert said in answer.stderr
    assert "Traceback" not in answer.stderr
