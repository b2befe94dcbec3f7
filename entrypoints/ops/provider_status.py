"""The providers' circuits as the console shows them: one line each while a
provider is down ("e-mail provider down since …, N waiting, next probe at …"),
in `club status`, its `--json`, `/ops/status` and the `/ops` page alike."""

from __future__ import annotations

from typing import Any

from application.provider_circuit import CircuitView

# The work class whose queue waits on each provider.
WAITING_ON = {"email": "notifications"}


def providers_json(
    views: list[CircuitView], queued: dict[str, int]
) -> list[dict[str, Any]]:
    """Each circuit, with the count of its work class's queue (`queued` by work
    class) and the line to show."""
    shown = []
    for view in views:
        state = view.state
        waiting = queued.get(WAITING_ON.get(view.provider, ""))
        opened = state.opened_at
        shown.append(
            {
                "provider": view.provider,
                "open": state.open,
                "down_since": None if opened is None else opened.isoformat(),
                "down_seconds": None
                if opened is None
                else (view.now - opened).total_seconds(),
                "next_probe_at": None
                if state.next_probe_at is None or opened is None
                else state.next_probe_at.isoformat(),
                "waiting": waiting,
                "failures": state.failures,
                "last_error": state.last_error,
                "line": view.line(waiting),
            }
        )
    return shown


def down_lines(shown: dict[str, Any]) -> list[str]:
    """The lines of the providers that are down, from `as_json`'s output."""
    return [p["line"] for p in shown.get("providers", []) if p["open"]]
