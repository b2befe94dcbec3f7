"""The /ops page's sections for a person's work: what waits by state (with a link
to each list), and a list by state, paged. Every value escaped; the page around
them is entrypoints/ops/html.py's."""

from __future__ import annotations

from datetime import datetime
from html import escape
from typing import Any
from urllib.parse import urlencode

from application.work_lists import STATES, WorkItem, WorkPage
from entrypoints.ops.attention import attention_lines, watched_states
from entrypoints.ops.html import console_page
from entrypoints.ops.view import seconds


def list_link(kind: str, state: str, *, limit: int = 50, offset: int = 0) -> str:
    query = urlencode({"state": state, "limit": limit, "offset": offset})
    return f"/ops/work/{kind}?{query}"


def work_section(shown: dict[str, Any]) -> str:
    """The lines `club status` prints, then a table each for purchases, e-mails
    and exports: each watched state's count and oldest age, linked to its list."""
    lines = "".join(f"<li>{escape(line)}</li>" for line in attention_lines(shown))
    said = (
        f"<ul class='attention'>{lines}</ul>"
        if lines
        else "<p>Nothing waits on a person.</p>"
    )
    tallies = shown.get("work", [])
    tables = "".join(
        _kind_table(kind, [t for t in tallies if t["kind"] == kind]) for kind in STATES
    )
    return f"<section id='work'><h2>Waiting on a person</h2>{said}{tables}</section>"


def _kind_table(kind: str, tallies: list[dict[str, Any]]) -> str:
    rows = "".join(
        f"<tr data-work='{escape(kind)}/{escape(t['state'])}'"
        + (" class='waiting'>" if t["count"] else ">")
        + f"<th scope='row'><a href='{escape(list_link(kind, t['state']))}'>"
        f"{escape(t['state'])}</a></th>"
        f"<td class='count'>{t['count']}</td>"
        f"<td class='oldest'>{escape(seconds(t['oldest_age_seconds']))}</td></tr>"
        for t in tallies
    )
    others = " · ".join(
        f"<a href='{escape(list_link(kind, state))}'>{escape(state)}</a>"
        for state in watched_states()[kind]
        if state not in {t["state"] for t in tallies}
    )
    return (
        f"<article class='work' id='work-{escape(kind)}'><h3>{escape(kind)}</h3>"
        "<table><thead><tr><th>state</th><th>count</th><th>oldest</th></tr>"
        f"</thead><tbody>{rows}</tbody></table>"
        f"<p class='detail'>Also listed: {others}</p></article>"
    )


def work_list_page(page: WorkPage, *, now: datetime, csrf: str, limit: int) -> str:
    states = " · ".join(
        f"<a href='{escape(list_link(page.kind, s, limit=limit))}'"
        + (" aria-current='page'>" if s == page.state else ">")
        + f"{escape(s)}</a>"
        for s in watched_states()[page.kind]
    )
    extra = list(page.items[0].detail) if page.items else []
    settled_here = page.kind == "purchases" and page.state == "manual_review"
    heads = "".join(
        f"<th>{escape(h)}</th>"
        for h in ("id", "age", "since", "reason", *extra)
        + (("decision",) if settled_here else ())
    )
    rows = "".join(
        f"<tr data-id='{escape(str(i.id))}'><td><a href='{escape(_trace(i))}'>"
        f"{escape(str(i.id))}</a></td>"
        f"<td class='oldest'>{escape(seconds(i.age_seconds(now)))}</td>"
        f"<td>{escape(i.since.strftime('%Y-%m-%d %H:%M:%S'))}</td>"
        f"<td class='reason'>{escape(i.reason or '')}</td>"
        + "".join(f"<td>{escape(i.detail.get(c, ''))}</td>" for c in extra)
        + (_settle(i) if settled_here else "")
        + "</tr>"
        for i in page.items
    )
    first = page.offset + 1 if page.items else 0
    last = page.offset + len(page.items)
    pager = []
    if page.offset > 0:
        back = max(page.offset - limit, 0)
        pager.append(
            f"<a rel='prev' href='{escape(list_link(page.kind, page.state, limit=limit, offset=back))}'>previous</a>"  # noqa: E501
        )
    if last < page.total:
        pager.append(
            f"<a rel='next' href='{escape(list_link(page.kind, page.state, limit=limit, offset=last))}'>next</a>"  # noqa: E501
        )
    table = (
        f"<table id='work-list'><thead><tr>{heads}</tr></thead>"
        f"<tbody>{rows}</tbody></table>"
        if page.items
        else f"<p>No {escape(page.kind)} are {escape(page.state)}.</p>"
    )
    main = (
        f"<section id='work-list-section' data-total='{page.total}'>"
        f"<h2>{escape(page.kind)}: {escape(page.state)}, oldest first</h2>"
        f"<p>{states}</p><p>{first} to {last} of {page.total}. "
        f"{' '.join(pager)}</p>{table}"
        "<p><a href='/ops/'>Back to the status</a></p></section>"
    )
    return console_page(f"{page.kind} {page.state}", at=now, csrf=csrf, main=main)


def _settle(item: WorkItem) -> str:
    """A purchase in review is settled on its own page (review_page.py)."""
    return f"<td><a href='/ops/purchases/{escape(str(item.id))}'>settle</a></td>"


def _trace(item: WorkItem) -> str:
    """Its journey (`club trace`): an e-mail's is its enrollment's."""
    return f"/ops/trace/{item.detail.get('enrollment_id', item.id)}"


def bad_state_text(kind: str, state: str) -> str:
    return f"{state!r} is not a state of {kind}; valid: {', '.join(STATES[kind])}"
