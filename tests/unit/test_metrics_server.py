"""A background role's /metrics: its own port, its own hop read at each scrape, a
scrape that answers even when that read fails, and ports `club up` hands out."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from prometheus_client import Gauge

from adapters.embedded.process import free_port
from entrypoints.config.settings import ConfigError, Settings
from entrypoints.runtime import metrics_server
from entrypoints.runtime.bootstrap import ROLES, Role
from entrypoints.runtime.metrics_server import (
    port_env,
    role_ports,
    serve_metrics,
    where_served,
)

RELAY = Role("relay")
PROBE = Gauge("club_test_probe", "Set by the test's refresh.")


def settings(**env: str) -> Settings:
    return Settings.from_env(env)


def scrape_while_serving(
    check: Callable[[str], Awaitable[Any]],
    refresh: Callable[[], Awaitable[None]] | None = None,
    role: Role = RELAY,
) -> Any:
    async def run() -> Any:
        server = await serve_metrics(settings(CLUB_METRICS_PORT=str(free_port())), role)
        assert server is not None
        if refresh is not None:
            server.refresh = refresh
        try:
            return await check(f"http://127.0.0.1:{server.port}")
        finally:
            await server.close()

    return asyncio.run(run())


async def get(url: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=5) as client:
        return await client.get(url)


def test_a_scrape_reads_the_hop_first() -> None:
    async def refresh() -> None:
        PROBE.set(42)

    response = scrape_while_serving(lambda base: get(f"{base}/metrics"), refresh)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=")
    assert "club_test_probe 42.0" in response.text


def test_a_refresh_that_fails_or_hangs_still_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(metrics_server, "REFRESH_BUDGET_S", 0.2)
    PROBE.set(7)

    async def hangs() -> None:
        PROBE.set(8)
        await asyncio.sleep(10)

    async def fails() -> None:
        raise RuntimeError("the database is away")

    for refresh in (hangs, fails):
        response = scrape_while_serving(lambda base: get(f"{base}/metrics"), refresh)
        assert response.status_code == 200
        assert "club_test_probe" in response.text


def test_only_metrics_is_served() -> None:
    response = scrape_while_serving(lambda base: get(f"{base}/other"))
    assert response.status_code == 404


def test_no_port_or_a_role_with_its_own_http_serves_nothing() -> None:
    async def run() -> list[object]:
        port = str(free_port())
        return [
            await serve_metrics(settings(), Role("relay")),
            await serve_metrics(settings(CLUB_METRICS_PORT="0"), Role("relay")),
            await serve_metrics(settings(CLUB_METRICS_PORT=port), Role("api")),
        ]

    assert asyncio.run(run()) == [None, None, None]


def test_a_port_taken_is_one_line_naming_the_setting() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=f"CLUB_METRICS_PORT={port}") as error:
            asyncio.run(
                serve_metrics(settings(CLUB_METRICS_PORT=str(port)), Role("saga"))
            )
    assert "\n" not in str(error.value)


def test_club_up_gives_the_api_and_every_background_role_a_port_of_its_own():
    kinds = ("api", "relay", "projector", "worker", "saga")
    serving = [r for r in ROLES if r.kind in kinds]
    assert {r.kind for r in serving} == set(kinds)

    free = role_ports(settings(), ROLES)
    assert list(free) == serving
    assert len(set(free.values())) == len(serving)

    base = _free_run(len(serving))
    fixed = role_ports(settings(CLUB_METRICS_PORT=str(base)), ROLES)
    assert list(fixed.values()) == [base + i for i in range(len(serving))]

    assert role_ports(settings(CLUB_METRICS_PORT="0"), ROLES) == {}


def _free_run(count: int) -> int:
    """A base port with `count` free ports from it: one free port's neighbours may
    be taken on a busy machine (other tests' servers)."""
    for _ in range(50):
        base = free_port()
        if base + count > 65535:
            continue
        try:
            for port in range(base, base + count):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    raise AssertionError(f"no run of {count} free ports found in 50 tries")


def test_club_up_refuses_a_base_whose_ports_are_taken() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match="metrics port"):
            role_ports(settings(CLUB_METRICS_PORT=str(port)), ROLES)
    with pytest.raises(ConfigError, match="no room"):
        role_ports(settings(CLUB_METRICS_PORT="65535"), ROLES)


def test_a_malformed_port_is_a_setting_error() -> None:
    with pytest.raises(ConfigError, match="CLUB_METRICS_PORT"):
        settings(CLUB_METRICS_PORT="metrics")
    with pytest.raises(ConfigError, match="CLUB_METRICS_PORT"):
        settings(CLUB_METRICS_PORT="70000")


def test_each_role_gets_its_own_port_and_club_up_says_where() -> None:
    ports = {Role("relay"): 9101, Role("worker", "exports"): 9102}
    assert port_env(ports, Role("relay")) == {"CLUB_METRICS_PORT": "9101"}
    # The API, and any role without a port, gets none (not the supervisor's base).
    assert port_env(ports, Role("api")) == {"CLUB_METRICS_PORT": "0"}
    lines = where_served(settings(CLUB_METRICS_HOST="192.0.2.7"), ports)
    assert "relay" in lines
    assert "http://192.0.2.7:9102/metrics" in lines
    assert "none" in where_served(settings(), {})


def test_only_the_relay_reports_the_relays_series() -> None:
    """Unlabelled, a projector's 0 would sit beside the relay's real value."""

    def families(role: Role) -> str:
        response = scrape_while_serving(lambda base: get(f"{base}/metrics"), role=role)
        return str(response.text)

    relay, worker = families(Role("relay")), families(Role("worker", "exports"))
    for name in ("club_events_published_total", "club_relay_lease_held"):
        assert f"\n{name} " in relay
        assert name not in worker
    assert "club_events_applied" in worker  # the rest is there
