"""What the API serves and to whom: its own names, a rate per caller."""

from __future__ import annotations

import pytest

from entrypoints.config.exposure import default_hosts, parse_hosts, parsed_rate
from entrypoints.config.settings import ConfigError, Settings
from entrypoints.http.hosts import _cached_host_of, _host_of, serves
from entrypoints.http.rate_limit import CallerLimit, RateLimitedError

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("header", "host"),
    [
        (b"127.0.0.1:8000", "127.0.0.1"),
        (b"LocalHost", "localhost"),
        (b"[::1]:8000", "::1"),
        (b"[::1]", "::1"),
        (b"api.club.example", "api.club.example"),
        (b"evil.example:8000", "evil.example"),
        (b"", ""),
    ],
)
def test_the_host_header_is_read_without_its_port(header: bytes, host: str) -> None:
    assert _host_of(header) == host


def test_only_a_name_sized_host_header_is_remembered() -> None:
    hosts = frozenset({"api.club.example"})
    _cached_host_of.cache_clear()
    assert serves(hosts, b"API.club.example:443")
    assert serves(hosts, b"API.club.example:443")  # from the cache
    huge = b"a" * 100_000 + b".example"
    assert not serves(hosts, huge)
    assert not serves(hosts, huge)
    info = _cached_host_of.cache_info()
    assert (info.hits, info.misses, info.currsize) == (1, 1, 1)  # huge: never kept


def test_by_default_the_api_answers_to_its_own_address_only() -> None:
    assert default_hosts("127.0.0.1") == {"localhost", "127.0.0.1", "::1"}
    assert "0.0.0.0" not in default_hosts("0.0.0.0")  # noqa: S104 - a name
    assert "api.internal" in default_hosts("api.internal")
    assert parse_hosts(" Api.Club.Example , [::1],") == {"api.club.example", "::1"}
    settings = Settings.from_env({"CLUB_ALLOWED_HOSTS": "club.example"})
    assert settings.allowed_hosts == {"club.example"}
    assert Settings.from_env({}).allowed_hosts == {"localhost", "127.0.0.1", "::1"}


def test_a_caller_has_its_own_budget() -> None:
    limit = CallerLimit("2/minute")
    limit.spend("ann")
    limit.spend("ann")
    limit.spend("bob")
    with pytest.raises(RateLimitedError) as refused:
        limit.spend("ann")
    assert 1 <= refused.value.retry_after_s <= 60


@pytest.mark.parametrize("rate", ["fast", "50/fortnight", "-1/second", ""])
def test_a_rate_that_is_no_rate_is_refused_at_start(rate: str) -> None:
    if rate:
        with pytest.raises(ValueError, match="no rate"):
            parsed_rate(rate)
    with pytest.raises(ConfigError, match="CLUB_RATE_LIMIT"):
        Settings.from_env({"CLUB_RATE_LIMIT": rate or " "})
    assert Settings.from_env({}).rate_limit == "50/second"


@pytest.mark.parametrize(
    ("raw", "kept"),
    [
        ("https://Club.Example", "https://club.example"),
        ("https://club.example:8443/", "https://club.example:8443"),
        ("", ""),
    ],
)
def test_the_public_url_is_an_origin(raw: str, kept: str) -> None:
    assert Settings.from_env({"CLUB_PUBLIC_URL": raw}).public_url == kept


@pytest.mark.parametrize(
    "raw",
    ["club.example", "ftp://club.example", "https://club.example/ops", "https://"],
)
def test_a_public_url_that_is_no_origin_is_refused(raw: str) -> None:
    with pytest.raises(ConfigError, match="CLUB_PUBLIC_URL"):
        Settings.from_env({"CLUB_PUBLIC_URL": raw})


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_caller_may_burst_its_rate_then_waits_its_share() -> None:
    clock = Clock()
    limit = CallerLimit("5/second", clock=clock)
    for _ in range(5):
        limit.spend("ann")  # a whole second's worth at once
    with pytest.raises(RateLimitedError):
        limit.spend("ann")
    clock.now += 0.2  # one request's share of the second
    limit.spend("ann")
    with pytest.raises(RateLimitedError):
        limit.spend("ann")
    clock.now += 10  # idle: the whole budget again, never more
    for _ in range(5):
        limit.spend("ann")
    with pytest.raises(RateLimitedError):
        limit.spend("ann")


def test_the_wait_told_is_when_the_next_request_passes() -> None:
    clock = Clock()
    limit = CallerLimit("2/minute", clock=clock)
    limit.spend("ann")
    limit.spend("ann")
    with pytest.raises(RateLimitedError) as refused:
        limit.spend("ann")
    assert refused.value.retry_after_s == 30
    clock.now += 29
    with pytest.raises(RateLimitedError):
        limit.spend("ann")
    clock.now += 1
    limit.spend("ann")


def test_forgetting_idle_callers_changes_no_answer(monkeypatch) -> None:
    monkeypatch.setattr("entrypoints.http.rate_limit.PRUNE_AT", 3)
    clock = Clock()
    limit = CallerLimit("1/second", clock=clock)
    for who in ("a", "b", "c", "d"):
        limit.spend(who)
    with pytest.raises(RateLimitedError):
        limit.spend("d")  # busy: remembered
    clock.now += 5
    for who in ("e", "a"):
        limit.spend(who)  # idle ones forgotten are as good as new
