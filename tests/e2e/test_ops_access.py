"""Operator access: every `/ops` route of the app answers 401 without a bearer token
and 403 with one that is not the operator's — enumerated from the app itself, so a
new `/ops` route mounted without the policy fails here. The one exception is named
here, not in the app: the page's login (`POST /ops/login`), which is how a browser
gets past the policy, and is checked below to hand a session to the token only."""

from __future__ import annotations

import re
from collections.abc import Iterator
from types import SimpleNamespace

import attrs
import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from starlette.routing import BaseRoute
from structlog.testing import capture_logs

from adapters.embedded.process import free_port
from entrypoints.config.settings import Settings
from entrypoints.http.rate_limit import CallerLimit
from entrypoints.ops import page
from entrypoints.ops.access import OpsConfig, require_operator
from entrypoints.ops.session import COOKIE, csrf_token, valid_session
from entrypoints.runtime import bootstrap
from entrypoints.runtime.api import create_app
from entrypoints.runtime.roles import exposure
from tests.api_client import bearer
from tests.identity import ADMIN, TEST_AUTH_SECRET, VERIFIER
from tests.servers import scratch_dir
from tests.stack import running_stack

TOKEN = "operator-secret-token-0123456789abcdef"  # noqa: S105 - a test value
OPS = OpsConfig(operator_token=TOKEN, promise_seconds=10, email_rate_per_s=100)
PROBLEM = "application/problem+json"
LOGIN = ("POST", "/ops/login")  # the one /ops route without the operator policy


def inner_app(app: object) -> FastAPI:
    """create_app wraps the FastAPI app in its ASGI edges (deadline, body limit)."""
    while not isinstance(app, FastAPI):
        app = app.app  # type: ignore[attr-defined]
    return app


@pytest.fixture(scope="module")
def app() -> object:
    # The routes never run past the policy: no database is needed.
    app = SimpleNamespace(app=None)
    return create_app(app, ops=OPS, verifier=VERIFIER)  # type: ignore[arg-type]


def every_route(
    routes: list[BaseRoute], prefix: str = "", policies: tuple[object, ...] = ()
) -> Iterator[tuple[str, BaseRoute, tuple[object, ...]]]:
    """(full path, route, dependencies added where it was included), through
    included routers too (FastAPI 0.165 keeps them as included-router entries)."""
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            context = route.include_context  # type: ignore[attr-defined]
            added = tuple(d.dependency for d in context.dependencies)
            yield from every_route(
                included.routes, prefix + context.prefix, policies + added
            )
        else:
            yield prefix + getattr(route, "path", ""), route, policies


def under_ops(path: str) -> bool:
    return path == "/ops" or path.startswith("/ops/")


def methods(route: BaseRoute) -> set[str]:
    return set(getattr(route, "methods", None) or {"GET"}) - {"HEAD"}


def is_login(path: str, route: BaseRoute) -> bool:
    """Exactly the login's method and path: another method on it is not exempt."""
    return (path, methods(route)) == (LOGIN[1], {LOGIN[0]})


def ops_routes(app: object) -> list[tuple[str, str]]:
    """Every (method, path) under /ops but the login."""
    found = []
    for path, route, _ in every_route(inner_app(app).routes):
        if under_ops(path) and not is_login(path, route):
            for method in sorted(methods(route)):
                found.append((method, re.sub(r"\{[^}]+\}", "x", path)))
    return found


def test_the_app_has_ops_routes(app) -> None:
    """So that the checks below cannot pass on an empty list."""
    assert ("GET", "/ops/status") in ops_routes(app)
    assert ("GET", "/ops/") in ops_routes(app)
    assert ("POST", "/ops/dlq/replay") in ops_routes(app)


def test_every_ops_route_carries_the_operator_dependency(app) -> None:
    def calls(route: BaseRoute) -> set[object]:
        if not isinstance(route, APIRoute):
            return set()  # a Mount or plain route under /ops has no policy: fails
        stack, seen = [route.dependant], set()
        while stack:
            dependant = stack.pop()
            seen.add(dependant.call)
            stack.extend(dependant.dependencies)
        return seen

    for path, route, added in every_route(inner_app(app).routes):
        if under_ops(path) and not is_login(path, route):
            policies = calls(route) | set(added)
            assert require_operator in policies, f"{path} has no operator policy"


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Basic b3BlcmF0b3I6c2VjcmV0"},
        {"Authorization": "Bearer "},
        {"Authorization": TOKEN},  # the token, but not as a bearer token
    ],
    ids=["none", "basic", "empty-bearer", "bare-token"],
)
def test_without_a_bearer_token_every_ops_route_is_401(app, headers) -> None:
    with TestClient(app, raise_server_exceptions=False) as client:
        for method, path in ops_routes(app):
            response = client.request(method, path, headers=headers)
            assert response.status_code == 401, (method, path, response.text)
            assert response.headers["content-type"] == PROBLEM
            assert response.headers["www-authenticate"].startswith("Bearer")
            assert "CLUB_OPERATOR_TOKEN" in response.json()["detail"]


@pytest.mark.parametrize(
    "token",
    ["a-students-token", TOKEN + "x", TOKEN[:-1], TOKEN.upper()],
    ids=["student", "longer", "shorter", "case"],
)
def test_with_any_other_bearer_token_every_ops_route_is_403(app, token) -> None:
    """Students carry no credential of Club's: any token not the operator's is
    refused as theirs would be."""
    with TestClient(app, raise_server_exceptions=False) as client:
        for method, path in ops_routes(app):
            response = client.request(method, path, headers=bearer(token))
            assert response.status_code == 403, (method, path, response.text)
            assert response.headers["content-type"] == PROBLEM
            assert TOKEN not in response.text


def test_the_operator_token_passes_the_policy(app) -> None:
    """Past the policy, /ops/status needs NATS (none here): 503, not 401/403.
    tests/integration/test_status.py reads the real chain through it."""
    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.get(
            "/ops/status", headers={"Authorization": f"bearer {TOKEN}"}
        )
    assert response.status_code == 503
    assert response.json()["type"] == "/problems/nats-unavailable"


def test_the_login_hands_a_session_to_the_operator_token_only(app) -> None:
    """The exempt route: no token, a wrong one or a cross-site form get no cookie;
    the token gets a signed session cookie that is not the token."""
    with TestClient(app, raise_server_exceptions=False) as client:
        refused = [
            client.post("/ops/login", data=form, headers=headers)
            for form, headers in (
                ({}, {}),
                ({"token": TOKEN + "x"}, {}),
                ({"token": TOKEN.upper()}, {}),
                ({"token": TOKEN}, {"Origin": "https://elsewhere.example"}),
            )
        ]
        granted = client.post(
            "/ops/login", data={"token": TOKEN}, follow_redirects=False
        )
    assert [r.status_code for r in refused] == [401, 401, 401, 403]
    assert all("set-cookie" not in r.headers for r in refused)
    assert granted.status_code == 303
    assert granted.headers["location"] == "/ops/"
    cookie = granted.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}=")
    assert TOKEN not in cookie


def test_the_session_cookie_passes_the_policy_and_a_change_needs_its_csrf_token(
    app,
) -> None:
    with TestClient(app, raise_server_exceptions=False) as client:
        login = client.post("/ops/login", data={"token": TOKEN}, follow_redirects=False)
        value = login.headers["set-cookie"].split(";")[0].split("=", 1)[1]
        session = valid_session(value, TOKEN)
        assert session is not None
        client.cookies.set(COOKIE, value)
        read = client.get("/ops/status")  # past the policy: no NATS here, 503
        no_csrf = client.post("/ops/logout", data={})
        wrong_csrf = client.post("/ops/logout", data={"csrf": "0" * 64})
        cross_site = client.post(
            "/ops/logout",
            data={"csrf": csrf_token(TOKEN, session)},
            headers={"Origin": "https://elsewhere.example"},
        )
        # A proxy in front of the page adds an Authorization header of its own.
        behind_proxies = [
            client.get("/ops/status", headers={"Authorization": header}).status_code
            for header in ("Basic b3BzOnB3", "Bearer the-proxys-own-token")
        ]
        logged_out = client.post(
            "/ops/logout",
            data={"csrf": csrf_token(TOKEN, session)},
            follow_redirects=False,
        )
    assert read.status_code == 503
    assert [no_csrf.status_code, wrong_csrf.status_code] == [403, 403]
    assert "CSRF" in no_csrf.json()["detail"]
    assert cross_site.status_code == 403
    assert behind_proxies == [503, 503]
    assert logged_out.status_code == 303
    assert "Max-Age=0" in logged_out.headers["set-cookie"]


def test_a_browser_without_a_session_gets_the_login_form(app) -> None:
    with TestClient(app, raise_server_exceptions=False) as client:
        page = client.get("/ops/", headers={"Accept": "text/html"})
        # behind an identity-aware proxy that adds a bearer token of its own
        proxied = client.get(
            "/ops/",
            headers={"Accept": "text/html", "Authorization": "Bearer proxy-jwt"},
        )
        script = client.get("/ops/", headers={"Authorization": "Bearer proxy-jwt"})
    for answer in (page, proxied):
        assert answer.status_code == 401
        assert answer.headers["content-type"].startswith("text/html")
        assert "action='/ops/login'" in answer.text
    assert script.status_code == 403  # a script's wrong token stays refused
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]


def test_liveness_needs_no_token(app) -> None:
    with TestClient(app, raise_server_exceptions=False) as client:
        assert client.get("/healthz").status_code == 200


def test_club_api_serves_ops_status_with_the_token_it_was_started_with(migrated):
    """The real role: `club up` hands the API CLUB_OPERATOR_TOKEN, the token it
    printed; /ops/status and /metrics read the chain through it."""
    started_with = "token-from-the-environment-0123456789"
    metrics_port = free_port()
    logs = scratch_dir("club-ops-api-")
    env = {"CLUB_OPERATOR_TOKEN": started_with, "CLUB_METRICS_PORT": str(metrics_port)}
    with running_stack(migrated, logs, ("api",), **env) as stack:
        status = f"{stack.base}/ops/status"
        refused = httpx.get(status, timeout=10)
        wrong = httpx.get(status, headers=bearer(TOKEN), timeout=10)
        shown = httpx.get(status, headers=bearer(started_with), timeout=10)
        public = httpx.get(f"{stack.base}/metrics", headers=ADMIN, timeout=10)
        metrics = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).text
    assert public.status_code == 404  # not on the public port, whoever asks
    assert refused.status_code == 401
    assert wrong.status_code == 403
    assert shown.status_code == 200, shown.text
    assert shown.json()["delivery"]["verdict"] == "on time"
    assert shown.json()["delivery"]["promise_seconds"] == 10  # the default
    assert 'club_delivery_eta_seconds{queue="notifications"} 0.0' in metrics
    assert "club_relay_lag_events 0.0" in metrics


def test_the_composition_root_hands_the_api_its_operator_settings() -> None:
    settings = Settings.from_env(
        {
            "CLUB_OPERATOR_TOKEN": TOKEN,
            "CLUB_PROMISE_SECONDS": "7",
            "CLUB_AUTH_SECRET": TEST_AUTH_SECRET,
        }
    )
    api = bootstrap.build_api(settings, SimpleNamespace(app=None))  # type: ignore[arg-type]
    ops = inner_app(api).state.ops
    assert ops == OpsConfig(
        operator_token=TOKEN,
        promise_seconds=7,
        email_rate_per_s=100,
        retention=settings.retention,  # /ops/status shows each store's beside its size
        exports_dir=settings.data_dir / "exports",
    )


def test_logins_are_throttled_per_address_and_logged_with_it(app, monkeypatch) -> None:
    monkeypatch.setattr(page, "LOGINS", CallerLimit("3/minute"))
    with (
        capture_logs() as logs,
        TestClient(app, raise_server_exceptions=False) as client,
    ):
        tries = [
            client.post("/ops/login", data={"token": f"guess-{i}"}) for i in range(4)
        ]
    assert [t.status_code for t in tries] == [401, 401, 401, 429]
    assert int(tries[-1].headers["retry-after"]) >= 1
    refused = [e for e in logs if e["event"] == "ops.login_refused"]
    assert refused
    assert refused[0]["remote"] == "testclient"
    assert any(e["event"] == "ops.login_throttled" for e in logs)


def test_behind_a_proxy_the_public_origin_decides_and_the_cookie_is_secure() -> None:
    """A proxy ending TLS: the API sees http and the proxy's upstream Host; the
    browser's Origin is the public one."""
    ops = attrs.evolve(OPS, public_url="https://club.example")
    app = create_app(SimpleNamespace(app=None), ops=ops, verifier=VERIFIER)  # type: ignore[arg-type]
    public = {"Origin": "https://club.example", "Host": "internal:8000"}
    with TestClient(app, raise_server_exceptions=False) as client:
        granted = client.post(
            "/ops/login", data={"token": TOKEN}, headers=public, follow_redirects=False
        )
        foreign = client.post(
            "/ops/login",
            data={"token": TOKEN},
            headers={"Origin": "https://internal:8000", "Host": "internal:8000"},
        )
    assert granted.status_code == 303
    assert "Secure" in granted.headers["set-cookie"].split("; ")
    assert foreign.status_code == 403


def test_forwarded_headers_are_believed_only_from_configured_proxies() -> None:
    nobody = exposure(Settings.from_env({}))
    assert nobody["proxy_headers"] is False
    proxy = exposure(Settings.from_env({"CLUB_TRUSTED_PROXIES": "10.0.0.5"}))
    assert proxy["proxy_headers"] is True
    assert proxy["forwarded_allow_ips"] == "10.0.0.5"
    assert nobody["limit_concurrency"] > 0
