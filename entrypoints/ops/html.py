"""The `/ops/` page's HTML: server-rendered strings, every value escaped.

No template engine and no front-end build: the page is a few tables, inline CSS, an
inline SVG line per hop, and one small inline script that reloads the page every
few seconds unless the operator is typing. Both inline blocks are allowed by their
hashes in the Content-Security-Policy, so nothing else can run or load on the page.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable
from datetime import datetime
from html import escape

import attrs

from application.console_reads import DeadLetter
from entrypoints.ops.view import DlqGroup, HopRow, RoleRow, Verdict, seconds

REFRESH_S = 5
CHART_W, CHART_H = 180, 34

STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1f2933;background:#f5f7fa}
header{display:flex;align-items:center;gap:1em;padding:.6em 1.5em;background:#243b53;
color:#fff}header h1{font-size:1.2em;margin:0}header .at{opacity:.8;flex:1}
header button{background:none;border:1px solid #9fb3c8;color:#fff}
main{padding:1em 1.5em;max-width:1200px}h2{font-size:1.1em;margin:1.2em 0 .4em}
h3{font-size:1em;margin:.8em 0 .3em}
table{border-collapse:collapse;background:#fff;width:100%}
th,td{text-align:left;padding:.35em .6em;border-bottom:1px solid #e4e7eb;
vertical-align:middle}thead th{background:#e4e7eb;font-weight:600}
td.count{text-align:right;font-variant-numeric:tabular-nums;font-weight:600}
tr.waiting th,tr.waiting td.count,tr.waiting td.oldest{color:#b44d12}
td.detail{color:#52606d;font-size:.9em}
.verdict{padding:.7em 1em;border-radius:6px;border-left:6px solid}
.verdict.ok{background:#e3f9e5;border-color:#3f9142}
.verdict.late{background:#ffe3e3;border-color:#ba2525}
.verdict .headline{font-size:1.15em;font-weight:600;margin:0 0 .3em}
.verdict ul{margin:0;padding-left:1.2em}
.banner{background:#fffbea;border:1px solid #f0b429;padding:.6em 1em;border-radius:6px}
.dlq{background:#fff;padding:.4em 1em 1em;margin:.6em 0;border-radius:6px;
border:1px solid #e4e7eb}
form.replay{margin-top:.6em;display:flex;gap:.5em;align-items:center}
form.replay input[type=text]{flex:1;max-width:28em}
input{font:inherit;padding:.3em .5em}
button{font:inherit;padding:.3em .9em;border-radius:4px;border:1px solid #829ab1;
background:#fff;cursor:pointer}button.danger{background:#ba2525;color:#fff;
border-color:#ba2525}
.login{max-width:28em;margin:4em auto;background:#fff;padding:1.5em 2em;
border-radius:8px;border:1px solid #e4e7eb}
.login input{width:100%;box-sizing:border-box}
.error{color:#ba2525;font-weight:600}
footer{padding:1em 1.5em;color:#52606d;font-size:.85em}
svg .line{fill:none;stroke:#2680c2;stroke-width:1.5}svg .area{fill:#dceefb}
svg text{font:10px system-ui,sans-serif;fill:#52606d}
svg .axis{stroke:#cbd2d9}svg .now{fill:#2680c2}
"""

# Reload unless the operator is typing (or has typed) into a field: a reload
# would throw the text away. POST answers carry no script: a reload there resends.
REFRESH_SCRIPT = (
    "(function(){function busy(){var a=document.activeElement;"
    "if(a&&(a.tagName==='INPUT'||a.tagName==='TEXTAREA'))return true;"
    "return Array.prototype.some.call(document.querySelectorAll('input[type=text]'),"
    "function(i){return i.value!=='';});}"
    "function tick(){if(busy()){setTimeout(tick," + str(REFRESH_S * 1000) + ");}"
    "else{location.reload();}}"
    "setTimeout(tick," + str(REFRESH_S * 1000) + ");})();"
)


def _hash(text: str) -> str:
    digest = hashlib.sha256(text.encode()).digest()
    return f"'sha256-{base64.b64encode(digest).decode()}'"


CSP = "; ".join(
    [
        "default-src 'none'",
        f"style-src {_hash(STYLE)}",
        f"script-src {_hash(REFRESH_SCRIPT)}",
        "img-src 'self' data:",
        "form-action 'self'",
        "frame-ancestors 'none'",  # no framing: a replay button cannot be overlaid
        "base-uri 'none'",
    ]
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
    # not no-referrer: with it a browser sends `Origin: null`, which is refused
    "Referrer-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
}


@attrs.frozen(kw_only=True)
class ReplayRecord:
    """The audit record of a replay done from the page, shown after it."""

    replay_id: str
    consumer: str
    reason: str
    replayed: int
    outcome: str


@attrs.frozen(kw_only=True)
class StatusView:
    at: datetime
    verdict: Verdict
    rows: list[HopRow]
    charts: dict[str, list[tuple[float, float]]]  # hop key -> (seconds ago, age)
    dlq: list[DlqGroup]
    csrf: str
    replayed: ReplayRecord | None = None
    roles: list[RoleRow] = attrs.Factory(list)
    # A person's work and the DLQ's audit trail (entrypoints/ops/work_html.py),
    # rendered and escaped there.
    work: str = ""
    dlq_trail: str = ""


def _page(title: str, body: str, *, script: bool = False) -> str:
    tail = f"<script>{REFRESH_SCRIPT}</script>" if script else ""
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        "<link rel='icon' href='data:,'>"
        f"<title>{escape(title)}</title><style>{STYLE}</style></head>"
        f"<body>{body}{tail}</body></html>"
    )


def login_page(error: str = "") -> str:
    shown = f"<p class='error' id='login-error'>{escape(error)}</p>" if error else ""
    return _page(
        "Club operations: log in",
        "<section class='login'><h1>Club operations</h1>"
        "<p>Enter the operator token (<code>CLUB_OPERATOR_TOKEN</code>; "
        "<code>club up</code> prints it). It is asked once: the browser then keeps a "
        "session cookie, not the token.</p>"
        f"{shown}<form method='post' action='/ops/login'>"
        "<p><label>Operator token<br><input type='password' name='token' "
        "id='token' autocomplete='current-password' required autofocus></label></p>"
        "<p><button type='submit' id='login'>Log in</button></p></form></section>",
    )


def _header(at: datetime, csrf: str) -> str:
    return (
        "<header><h1>Club operations</h1>"
        f"<span class='at'>as of {escape(at.strftime('%H:%M:%S'))} UTC</span>"
        "<form method='post' action='/ops/logout'>"
        f"{_hidden('csrf', csrf)}<button type='submit'>Log out</button></form>"
        "</header>"
    )


def status_page(view: StatusView) -> str:
    body = (
        _header(view.at, view.csrf)
        + "<main>"
        + _banner(view.replayed)
        + _verdict(view.verdict)
        + view.work
        + _hops(view.rows, view.charts)
        + _roles(view.roles)
        + _dead_letters(view.dlq, view.csrf)
        + view.dlq_trail
        + "</main><footer>Refreshes every "
        f"{REFRESH_S} s, paused while you type. The same data as "
        "<a href='/ops/status'>/ops/status</a> and <code>club status</code>.</footer>"
    )
    return _page("Club operations", body, script=True)


def dry_run_page(
    *,
    at: datetime,
    csrf: str,
    consumer: str,
    reason: str,
    matched: list[DeadLetter],
    batch: int,
) -> str:
    if not matched:
        result = (
            f"<p class='would' data-count='0'>Nothing to hand back: "
            f"<strong>{escape(consumer)}</strong> has no dead letters.</p>"
            "<p><a href='/ops/'>Back to the status</a></p>"
        )
    else:
        count = len(matched)
        result = (
            f"<p class='would' data-count='{count}'>Would hand back <strong>"
            f"{count}</strong> dead letter{_s(count)} to <strong>{escape(consumer)}"
            f"</strong> (at most {batch} in one replay), for the reason "
            f"“{escape(reason)}”. Check that the cause is fixed first: a letter "
            "that fails again comes back to the DLQ.</p>"
            + _entries(matched, at)
            + "<form method='post' action='/ops/dlq/replay' class='replay'>"
            + _hidden("csrf", csrf)
            + _hidden("consumer", consumer)
            + _hidden("reason", reason)
            + _hidden("batch", str(count))
            + f"<button type='submit' class='danger' id='confirm'>Replay {count} now"
            "</button> <a href='/ops/'>Cancel</a></form>"
        )
    body = (
        _header(at, csrf)
        + f"<main><section id='dry-run'><h2>Dry run: {escape(consumer)}</h2>"
        + result
        + "</section></main>"
    )
    return _page("Club operations: dry run", body)


def console_page(title: str, *, at: datetime, csrf: str, main: str) -> str:
    """A page of the console beside the status (`main`: escaped HTML)."""
    body = _header(at, csrf) + f"<main>{main}</main>"
    return _page(f"Club operations: {title}", body)


def message_page(title: str, text: str) -> str:
    return _page(
        f"Club operations: {title}",
        f"<section class='login'><h1>{escape(title)}</h1><p>{escape(text)}</p>"
        "<p><a href='/ops/'>Back to the status</a></p></section>",
    )


def sparkline(points: list[tuple[float, float]], window_s: float = 3600.0) -> str:
    """Oldest age over the window, now at the right; the peak labelled."""
    if not points:
        return (
            f"<svg width='{CHART_W}' height='{CHART_H}' role='img' "
            "aria-label='no samples yet'><text x='2' y='20'>no samples yet</text></svg>"
        )
    peak = max(age for _, age in points)
    top = max(peak, 1.0)
    usable = CHART_H - 4
    right = CHART_W - 3  # room for the dot that marks now

    def xy(ago: float, age: float) -> str:
        x = right * (1 - min(ago, window_s) / window_s)
        return f"{x:.1f},{CHART_H - 1 - usable * age / top:.1f}"

    line = " ".join(xy(ago, age) for ago, age in points)
    first_x = xy(points[0][0], 0).split(",")[0]
    base = CHART_H - 1
    area = f"{first_x},{base} {line} {right},{base}"
    now_x, now_y = xy(*points[-1]).split(",")
    label = f"peak {seconds(peak)}, now {seconds(points[-1][1])}"
    return (
        f"<svg width='{CHART_W}' height='{CHART_H}' viewBox='0 0 {CHART_W} {CHART_H}' "
        f"role='img' aria-label='oldest age over the last hour: {escape(label)}'>"
        f"<title>{escape(label)}</title>"
        f"<line class='axis' x1='0' y1='{base}' x2='{CHART_W}' y2='{base}'/>"
        f"<polygon class='area' points='{area}'/>"
        f"<polyline class='line' points='{line}'/>"
        f"<circle class='now' cx='{now_x}' cy='{now_y}' r='2.5'/>"
        f"<text x='2' y='10'>{escape(label)}</text>"
        "</svg>"
    )


def _banner(record: ReplayRecord | None) -> str:
    if record is None:
        return ""
    return (
        f"<p class='banner' id='replayed' data-count='{record.replayed}'>Replay "
        f"{escape(record.replay_id)}: handed back {record.replayed} of "
        f"{escape(record.consumer)}'s dead letters ({escape(record.outcome)}); "
        f"audited as ops-page, “{escape(record.reason)}”.</p>"
    )


def _verdict(verdict: Verdict) -> str:
    kind = "ok" if verdict.on_time else "late"
    details = "".join(f"<li>{escape(d)}</li>" for d in verdict.details)
    return (
        f"<section id='verdict' class='verdict {kind}'>"
        f"<p class='headline'>Confirmation e-mail. {escape(verdict.headline)}</p>"
        f"<ul>{details}</ul></section>"
    )


def _hops(rows: Iterable[HopRow], charts: dict[str, list[tuple[float, float]]]) -> str:
    body = "".join(
        f"<tr data-hop='{escape(row.key)}'"
        + (" class='waiting'>" if row.count else ">")
        + f"<th scope='row'>{escape(row.label)}</th>"
        f"<td class='count'>{row.count}</td>"
        f"<td class='oldest'>{escape(seconds(row.oldest_seconds))}</td>"
        f"<td class='lag'>{escape(row.lag)}</td>"
        f"<td class='chart'>{sparkline(charts.get(row.key, []))}</td>"
        f"<td class='detail'>{escape(row.detail)}</td></tr>"
        for row in rows
    )
    return (
        "<section id='hops'><h2>The chain, hop by hop</h2><table><thead><tr>"
        "<th>hop</th><th>count</th><th>oldest</th><th>lag</th>"
        "<th>oldest age, last hour</th><th>detail</th></tr></thead>"
        f"<tbody>{body}</tbody></table></section>"
    )


def _roles(rows: Iterable[RoleRow]) -> str:
    body = "".join(
        f"<tr data-role='{escape(row.role)}'"
        + (" class='waiting'>" if row.last_beat_seconds is None else ">")
        + f"<th scope='row'>{escape(row.role)}</th>"
        + (
            "<td class='beat'>—</td><td class='detail'>none running</td></tr>"
            if row.last_beat_seconds is None
            else f"<td class='beat'>{escape(seconds(row.last_beat_seconds))} ago</td>"
            f"<td class='detail instance'>{escape(row.instance)}</td></tr>"
        )
        for row in rows
    )
    return (
        "<section id='roles'><h2>Roles alive</h2><table><thead><tr>"
        "<th>role</th><th>last beat</th><th>instance</th></tr></thead>"
        f"<tbody>{body}</tbody></table></section>"
    )


def _dead_letters(groups: list[DlqGroup], csrf: str) -> str:
    if not groups:
        return (
            "<section id='dlq'><h2>Dead letters</h2>"
            "<p>The dead-letter queue is empty.</p></section>"
        )
    return (
        "<section id='dlq'><h2>Dead letters, by consumer and reason</h2>"
        + "".join(_group(g, csrf) for g in groups)
        + "</section>"
    )


def _group(group: DlqGroup, csrf: str) -> str:
    rows = "".join(
        f"<tr><td class='reason'>{escape(r.reason)}</td>"
        f"<td class='count'>{r.count}</td>"
        f"<td>{escape(', '.join(r.owners) or '—')}</td>"
        f"<td>{escape(seconds(r.oldest_seconds))}</td></tr>"
        for r in group.reasons
    )
    unread = group.messages - group.reasons_read
    note = (
        f"<p class='detail'>Reasons read for the oldest {group.reasons_read}; "
        f"{unread} more not read here (<code>club dlq list</code> shows all).</p>"
        if unread > 0
        else ""
    )
    consumer = escape(group.consumer)
    return (
        f"<article class='dlq' data-consumer='{consumer}'>"
        f"<h3>{consumer}: {group.messages} dead letter{_s(group.messages)}, "
        f"the oldest {escape(seconds(group.oldest_seconds))}</h3>"
        "<table><thead><tr><th>reason</th><th>count</th><th>owner</th>"
        f"<th>oldest</th></tr></thead><tbody>{rows}</tbody></table>{note}"
        "<form method='post' action='/ops/dlq/dry-run' class='replay'>"
        + _hidden("csrf", csrf)
        + _hidden("consumer", group.consumer)
        + "<label for='reason-"
        + consumer
        + "'>Why replay?</label><input type='text' name='reason' required "
        f"maxlength='200' id='reason-{consumer}' "
        "placeholder='the cause is fixed: what changed'>"
        "<button type='submit' class='dry-run'>Dry run</button></form></article>"
    )


def _entries(entries: list[DeadLetter], now: datetime) -> str:
    rows = "".join(
        f"<tr><td>{e.dlq_seq}</td><td>{escape(e.event_id)}</td>"
        f"<td>{escape(e.original_subject)}</td><td>{escape(e.reason)}</td>"
        f"<td>{'' if e.deliveries is None else e.deliveries}</td>"
        f"<td>{escape(e.owner)}</td><td>{escape(seconds(e.age_seconds(now)))}</td></tr>"
        for e in entries
    )
    return (
        "<table id='would-replay'><thead><tr><th>#</th><th>event</th><th>subject</th>"
        "<th>reason</th><th>tries</th><th>owner</th><th>age</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )


def _hidden(name: str, value: str) -> str:
    return f"<input type='hidden' name='{name}' value='{escape(value)}'>"


def _s(count: int) -> str:
    return "" if count == 1 else "s"
