"""What both provider sandboxes do alike, their idempotency keys and knobs coming
from the same code (sandboxes/): each sandbox's test module subclasses
`SandboxContract` with a `Test` prefix.

Subclasses provide the fixtures `http` (a client on the sandbox, its knobs at the
defaults) and `sandbox` (its SandboxProcess), and say where things are accepted
(`resource`), how (`accept`) and what another request under one key looks like.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar
from urllib.parse import quote
from uuid import uuid4

import httpx
import pytest

from tests.integration.sandbox_process import SandboxProcess


class SandboxContract:
    """Not collected itself (no `Test` prefix)."""

    resource: ClassVar[str]  # "/messages", "/payments"
    other_body: ClassVar[dict[str, Any]]  # a request unlike the default one
    limited: ClassVar[tuple[int, int]]  # a rate limit per second, requests over it

    def accept(
        self, http: httpx.Client, key: str | None = None, body: Any = None
    ) -> httpx.Response:
        raise NotImplementedError

    def test_the_same_key_with_another_request_is_refused(
        self, http: httpx.Client
    ) -> None:
        key = str(uuid4())
        self.accept(http, key)
        other = self.accept(http, key, self.other_body)
        assert other.status_code == 422
        assert other.json()["type"] == "/problems/idempotency-key-reused"

    def test_latency_delays_every_provider_answer(
        self, http: httpx.Client, sandbox: SandboxProcess
    ) -> None:
        sandbox.set_knobs(latency_ms=400)
        started = time.monotonic()
        assert self.accept(http).status_code == 201
        assert http.get(f"{self.resource}/{uuid4()}").status_code == 404
        assert time.monotonic() - started >= 0.8

    @pytest.mark.parametrize("fail_status", [503, 500, 400])
    def test_a_failure_accepts_nothing(
        self, http: httpx.Client, sandbox: SandboxProcess, fail_status: int
    ) -> None:
        sandbox.set_knobs(fail_rate=1.0, fail_status=fail_status)
        key = str(uuid4())
        assert self.accept(http, key).status_code == fail_status
        sandbox.set_knobs(fail_rate=0.0)
        assert http.get(f"{self.resource}/{key}").status_code == 404

    def test_above_the_rate_limit_requests_get_429_with_retry_after(
        self, http: httpx.Client, sandbox: SandboxProcess
    ) -> None:
        limit, over = self.limited
        sandbox.set_knobs(rate_limit_per_s=limit)
        time.sleep(1.05)  # the requests of earlier tests leave the window
        answers = [self.accept(http) for _ in range(limit + over)]
        assert [a.status_code for a in answers] == [201] * limit + [429] * over
        assert answers[-1].headers["Retry-After"] == "1"
        assert 0 < answers[-1].json()["retry_after_ms"] <= 1000
        replay = self.accept(http, answers[0].json()["idempotency_key"])
        assert replay.status_code == 201  # a repeat accepts nothing new: never limited
        time.sleep(1.05)
        assert self.accept(http).status_code == 201

    def test_a_key_with_slashes_and_percents_is_looked_up_as_sent(
        self, http: httpx.Client
    ) -> None:
        key = "a/b%2Fc?d#e"
        assert self.accept(http, key).status_code == 201
        looked_up = http.get(f"{self.resource}/{quote(key, safe='')}")
        assert looked_up.status_code == 200
        assert looked_up.json()["idempotency_key"] == key
