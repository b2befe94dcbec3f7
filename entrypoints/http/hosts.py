"""Only the API's own names are served (contract §4.1, CLUB_ALLOWED_HOSTS): a web
page that rebinds its DNS name to 127.0.0.1 reaches the port, but sends its own
name in `Host`, and is refused before anything else runs."""

from __future__ import annotations

from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

from entrypoints.http.problems import problem


def _host_of(header: bytes) -> str:
    text = header.decode("latin-1").strip().lower()
    if text.startswith("["):  # [::1]:8000
        return text[1 : text.find("]")] if "]" in text else text
    return text.rsplit(":", 1)[0] if text.count(":") == 1 else text


class AllowedHosts:
    def __init__(self, app: ASGIApp, hosts: Iterable[str]) -> None:
        self.app = app
        self.hosts = frozenset(hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = dict(scope["headers"]).get(b"host", b"")
        if _host_of(header) in self.hosts:
            await self.app(scope, receive, send)
            return
        refused = problem(
            400, "host-not-allowed", "Host not allowed",
            "this API answers to its own names only (CLUB_ALLOWED_HOSTS)",
        )  # fmt: skip
        await refused(scope, receive, send)
