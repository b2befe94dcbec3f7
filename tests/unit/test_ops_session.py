"""The `/ops/` session cookie and its CSRF token: signed, expiring, tied to a token."""

from __future__ import annotations

import pytest

from entrypoints.ops.session import (
    COOKIE,
    Session,
    cookie_header,
    cross_site,
    csrf_matches,
    csrf_token,
    new_session_cookie,
    valid_session,
)

TOKEN = "operator-secret-token"  # noqa: S105 - a test value
NOW = 1_800_000_000.0


def test_a_fresh_cookie_is_a_valid_session_until_it_expires() -> None:
    cookie = new_session_cookie(TOKEN, now=NOW, lifetime_s=60)
    session = valid_session(cookie, TOKEN, now=NOW + 59)
    assert session is not None
    assert session.expires_at == NOW + 60
    assert valid_session(cookie, TOKEN, now=NOW + 60) is None


def test_the_cookie_is_not_the_token_nor_reveals_it() -> None:
    cookie = new_session_cookie(TOKEN, now=NOW)
    assert TOKEN not in cookie
    assert new_session_cookie(TOKEN, now=NOW) != cookie  # a random id each time


def test_a_new_operator_token_logs_everyone_out() -> None:
    cookie = new_session_cookie(TOKEN, now=NOW)
    assert valid_session(cookie, TOKEN + "-rotated", now=NOW) is None


@pytest.mark.parametrize(
    "tamper",
    [
        lambda c: c[:-1] + ("0" if c[-1] != "0" else "1"),  # the MAC
        lambda c: "x" + c,  # the id
        lambda c: c.replace(c.split(".")[1], str(int(c.split(".")[1]) + 3600)),
        lambda c: c.rsplit(".", 1)[0],  # no MAC
        lambda c: c + ".more",
        lambda _: "",
    ],
    ids=["mac", "id", "longer-expiry", "no-mac", "extra-part", "empty"],
)
def test_a_tampered_cookie_is_no_session(tamper) -> None:
    cookie = new_session_cookie(TOKEN, now=NOW)
    assert valid_session(tamper(cookie), TOKEN, now=NOW) is None


def test_no_operator_token_accepts_no_cookie() -> None:
    assert valid_session(new_session_cookie("", now=NOW), "", now=NOW) is None


def test_the_csrf_token_belongs_to_one_session_and_one_operator_token() -> None:
    one, other = Session("a", 1), Session("b", 1)
    token = csrf_token(TOKEN, one)
    assert csrf_matches(token, TOKEN, one)
    assert not csrf_matches(token, TOKEN, other)
    assert not csrf_matches(token, TOKEN + "-rotated", one)
    assert not csrf_matches("", TOKEN, one)
    assert token not in (TOKEN, "a")


@pytest.mark.parametrize(
    ("origin", "host", "refused"),
    [
        (None, "club.example:8000", False),
        ("http://club.example:8000", "club.example:8000", False),
        ("https://CLUB.example:8000", "club.example:8000", False),
        ("https://evil.example", "club.example:8000", True),
        ("http://club.example:9000", "club.example:8000", True),
        ("null", "club.example:8000", True),
    ],
)
def test_an_origin_other_than_the_host_is_cross_site(origin, host, refused) -> None:
    assert cross_site(origin, host) is refused


def test_the_cookie_is_http_only_strict_and_scoped_to_ops() -> None:
    header = cookie_header("v", secure=False)
    parts = header.split("; ")
    assert parts[0] == f"{COOKIE}=v"
    assert {"HttpOnly", "SameSite=Strict", "Path=/ops"} <= set(parts)
    assert "Secure" not in parts
    assert "Secure" in cookie_header("v", secure=True).split("; ")


@pytest.mark.parametrize(
    ("origin", "refused"),
    [
        ("https://club.example", False),
        ("https://CLUB.example", False),
        ("http://club.example", True),  # the same name, not the same origin
        ("https://internal:8000", True),  # what a proxy's upstream Host says
        ("https://evil.example", True),
    ],
)
def test_behind_a_proxy_the_public_origin_is_the_pages(origin, refused) -> None:
    assert cross_site(origin, "https://club.example") is refused
