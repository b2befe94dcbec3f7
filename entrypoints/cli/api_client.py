"""The demo's client of the running API: one caller's bearer token on each request,
a 429 or 503 waited out (its Retry-After), and any other refusal one line.

Its failure model: nothing answering is `ApiUnreachableError` (start `club up`);
an answer of 4xx or 5xx, or no answer mid-way, is `ApiRefusedError`, whose message
names the request and the problem the API gave, never a traceback.
"""

from __future__ import annotations

import json
import math
import time
from http import HTTPStatus
from typing import Any

import urllib3
from urllib3.exceptions import HTTPError

from entrypoints.config.exposure import WILDCARDS
from entrypoints.config.settings import Settings

TIMEOUT = urllib3.Timeout(connect=2.0, read=30.0)
MOST_TRIES = 5  # a 429 or 503 is waited out (its Retry-After) this many times
LONGEST_WAIT_S = 5.0
PASSING = frozenset({HTTPStatus.TOO_MANY_REQUESTS, HTTPStatus.SERVICE_UNAVAILABLE})


class ApiUnreachableError(Exception):
    """Nothing answers at the API's address: `club up` is not running there."""


class ApiRefusedError(Exception):
    """The API answered 4xx or 5xx; the message names the request and its problem."""


def api_base(settings: Settings) -> str:
    """Where `club up` serves the API: CLUB_HTTP_HOST (a wildcard bind is reached on
    loopback) and CLUB_HTTP_PORT, as `club up` announces it."""
    host = settings.http_host.strip("[]")
    host = "127.0.0.1" if host in WILDCARDS else host
    return f"http://{f'[{host}]' if ':' in host else host}:{settings.http_port}"


class ApiClient:
    """One caller's view of the API: a bearer token on every request; a 429 or 503
    waited out and sent again (safe: PUTs are idempotent, POSTs carry a key)."""

    def __init__(self, base: str) -> None:
        self.base = base
        self._http = urllib3.PoolManager(maxsize=1, timeout=TIMEOUT, retries=False)

    def check_reachable(self) -> None:
        try:
            answer = self._http.request("GET", f"{self.base}/healthz")
        except HTTPError:
            raise ApiUnreachableError from None
        if answer.status != HTTPStatus.OK:  # another server holds the port
            msg = f"GET /healthz answered {answer.status}"
            raise ApiUnreachableError(msg)

    def call(
        self,
        method: str,
        path: str,
        token: str,
        body: dict[str, Any] | None = None,
        *,
        key: str | None = None,
    ) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {token}"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if key is not None:
            headers["Idempotency-Key"] = key
        data = None if body is None else json.dumps(body).encode()
        tries = 0
        while True:
            tries += 1
            try:
                answer = self._http.request(
                    method, self.base + path, body=data, headers=headers
                )
            except HTTPError as e:
                msg = f"{method} {path}: no answer from {self.base} ({e})"
                raise ApiRefusedError(msg) from None
            if answer.status < HTTPStatus.BAD_REQUEST:
                return _json_object(method, path, answer)
            if answer.status not in PASSING or tries == MOST_TRIES:
                raise ApiRefusedError(_refusal(method, path, answer))
            time.sleep(_wait_s(answer.headers.get("Retry-After")))

    def close(self) -> None:
        self._http.clear()


def _json_object(
    method: str, path: str, answer: urllib3.BaseHTTPResponse
) -> dict[str, Any]:
    try:
        found = json.loads(answer.data)
    except ValueError:
        found = None
    if not isinstance(found, dict):
        msg = f"{method} {path} answered {answer.status} without a JSON object"
        raise ApiRefusedError(msg)
    return found


def _refusal(method: str, path: str, answer: urllib3.BaseHTTPResponse) -> str:
    """`POST /lessons answered 403 Forbidden: <detail>`, from its problem details."""
    try:
        problem = json.loads(answer.data)
    except ValueError:
        problem = None
    problem = problem if isinstance(problem, dict) else {}
    title = str(problem.get("title") or answer.reason or "")
    detail = " ".join(str(problem.get("detail") or "").split())[:300]
    said = f"{method} {path} answered {answer.status} {title}".rstrip()
    return f"{said}: {detail}" if detail else said


def _wait_s(retry_after: str | None) -> float:
    try:
        wait = float(retry_after or 1)
    except ValueError:
        return 1.0
    return min(max(wait, 0.1), LONGEST_WAIT_S) if math.isfinite(wait) else 1.0
