"""The HS256 secret `club up` keeps in CLUB_DATA_DIR when CLUB_AUTH_SECRET is unset."""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from adapters.identity.tokens import MIN_SECRET_BYTES
from entrypoints.config.auth_settings import (
    AuthSettingError,
    AuthSettings,
    kept_secret,
    secret_file,
    signing_secret,
)

pytestmark = pytest.mark.unit


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_fresh_data_dir_gets_a_private_secret_long_enough_for_hs256(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"  # not there yet, as before a first `club up`
    secret = kept_secret(data_dir)
    path = data_dir / "auth" / "secret"
    assert secret_file(data_dir) == path
    assert path.read_text() == secret + "\n"
    assert len(secret.encode()) >= MIN_SECRET_BYTES
    assert oct(mode(path)) == oct(0o600)
    assert oct(mode(path.parent)) == oct(0o700)
    assert not list(path.parent.glob(".*"))  # no partial file left beside it


def test_the_next_start_keeps_the_same_secret(tmp_path: Path) -> None:
    first = kept_secret(tmp_path)
    written = secret_file(tmp_path).stat()
    assert kept_secret(tmp_path) == first
    again = secret_file(tmp_path).stat()
    assert (again.st_ino, again.st_mtime_ns) == (written.st_ino, written.st_mtime_ns)


def test_each_data_dir_gets_its_own_random_secret(tmp_path: Path) -> None:
    assert kept_secret(tmp_path / "a") != kept_secret(tmp_path / "b")


def test_a_secret_left_readable_by_others_is_kept_and_made_private(
    tmp_path: Path,
) -> None:
    """As for the broker's credentials file: a copied or hand-made secret that
    others may read is tightened, never replaced (tokens signed with it still work)."""
    path = secret_file(tmp_path)
    path.parent.mkdir(mode=0o755)
    path.parent.chmod(0o755)
    mine = "a-secret-i-chose-myself-0123456789abcdef"
    path.write_text(mine + "\n")
    path.chmod(0o644)
    assert kept_secret(tmp_path) == mine
    assert oct(mode(path)) == oct(0o600)
    assert oct(mode(path.parent)) == oct(0o700)


@pytest.mark.parametrize(
    "text", ["", "\n", "too-short\n", "x" * (MIN_SECRET_BYTES - 1)]
)
def test_a_secret_too_short_for_hs256_is_refused_with_the_fix(
    tmp_path: Path, text: str
) -> None:
    """Handed to the roles, it would fail every one of them at start (and `club up`
    would restart them for ever); `club token` could not sign with it."""
    path = secret_file(tmp_path)
    path.parent.mkdir(mode=0o700)
    path.write_text(text)
    readers: list[Callable[[], str]] = [
        lambda: kept_secret(tmp_path),  # `club up`
        lambda: signing_secret(AuthSettings(), tmp_path),  # `club token`
    ]
    for read in readers:
        with pytest.raises(AuthSettingError) as refused:
            read()
        said = str(refused.value)
        assert str(path) in said
        assert f"at least {MIN_SECRET_BYTES} bytes" in said
        assert "delete it" in said
        assert "CLUB_AUTH_SECRET" in said
    assert path.read_text() == text  # the operator's file, left for them to fix


def test_club_token_signs_with_club_auth_secret_before_the_kept_one(
    tmp_path: Path,
) -> None:
    kept = kept_secret(tmp_path)
    assert signing_secret(AuthSettings(), tmp_path) == kept
    given = "given-in-club-auth-secret-0123456789abcdef"
    assert signing_secret(AuthSettings(secret=given), tmp_path) == given


def test_club_token_without_any_secret_says_how_to_get_one(tmp_path: Path) -> None:
    with pytest.raises(AuthSettingError) as refused:
        signing_secret(AuthSettings(), tmp_path)
    said = str(refused.value)
    assert "set CLUB_AUTH_SECRET, or run `club up` once" in said
    assert str(secret_file(tmp_path)) in said
    assert not secret_file(tmp_path).exists()  # `club token` never makes one


def test_a_secret_that_is_a_link_is_refused_and_its_target_left_alone(
    tmp_path: Path,
) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("x" * 64)
    target.chmod(0o644)
    path = secret_file(tmp_path / "data")
    path.parent.mkdir(parents=True)
    path.symlink_to(target)
    with pytest.raises(AuthSettingError, match="symbolic link"):
        kept_secret(tmp_path / "data")
    assert mode(target) == 0o644


def test_a_secret_that_is_not_text_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = secret_file(tmp_path)
    path.parent.mkdir(mode=0o700)
    path.write_bytes(b"\xff" * 64)
    with pytest.raises(AuthSettingError, match="delete it for a new one"):
        kept_secret(tmp_path)
