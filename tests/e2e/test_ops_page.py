"""The operator's page `/ops/` in a real headless Chromium (Debian's `chromium` and
`chromium-driver`, driven by Selenium) on running roles: a backlog shows on the
page, and a dead letter replayed from it is delivered once — a second replay does
nothing. The session cookie is HttpOnly and SameSite=Strict, and a POST carrying
the cookie without the page's CSRF token is refused.

The screenshot is kept in test-artefacts/ops-page.png (repo-relative)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
import pytest
import sqlalchemy as sa
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from adapters.postgres.tables import dlq_replays
from entrypoints.ops.session import COOKIE
from tests.api_client import ClubClient, bearer
from tests.integration.sandbox_process import SandboxProcess
from tests.servers import scratch_dir
from tests.stack import FAST_FAULTS, Stack, eventually, running_stack, scratch_for

TOKEN = "page-operator-token-0123456789abcdef"  # noqa: S105 - a test value
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ARTEFACTS = Path(__file__).resolve().parents[2] / "test-artefacts"
BACKLOG = 3
REASON = "the provider accepts the address again"


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        pytest.fail(
            f"{', '.join(missing)} missing: the /ops/ page is tested in Debian's "
            "headless Chromium; run `apt-get install chromium chromium-driver`"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",  # root in a container has no user namespace to sandbox in
        "--disable-dev-shm-usage",
        "--window-size=1280,1400",
        f"--user-data-dir={scratch_dir('club-ops-chromium-')}",
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def stack(migrated, email_sandbox, request) -> Iterator[Stack]:
    env = FAST_FAULTS | {
        "CLUB_EMAIL_PROVIDER_URL": email_sandbox.url,
        "CLUB_OPERATOR_TOKEN": TOKEN,
    }
    logs = scratch_for(request, "logs")
    with running_stack(migrated, logs, ("api", "relay", "worker"), **env) as stack:
        stack.api_started_at = time.monotonic()  # type: ignore[attr-defined]
        yield stack


def ops_status(stack: Stack) -> dict[str, Any]:
    response = httpx.get(
        f"{stack.base}/ops/status",
        headers=bearer(TOKEN),
        timeout=10,
    )
    assert response.status_code == 200, response.text
    return dict(response.json())


def dead_letters(stack: Stack) -> int:
    return sum(hop["messages"] for hop in ops_status(stack)["dlq"])


def queued_emails(stack: Stack) -> int:
    return int(ops_status(stack)["work_classes"]["notifications"]["queued"])


def messages_to(sandbox: SandboxProcess, address: str) -> int:
    listing = sandbox.listed(limit=1000)["messages"]
    return sum(1 for m in listing if m["to"] == address)


def enroll(api: str, lesson_id: str, email: str) -> None:
    with ClubClient(api) as club:
        student = club.student(email=email)
        response = club.enroll(lesson_id, student)
    assert response.status_code == 201, response.text


def retried(action: Callable[[], Any]) -> Any:
    """The page reloads itself every few seconds: an element found just before a
    reload is stale; look again."""
    return eventually(lambda: _fresh(action), timeout=20, interval=0.2)


def _fresh(action: Callable[[], Any]) -> Any:
    try:
        return action()
    except StaleElementReferenceException:
        return None


def text_of(driver: WebDriver, css: str) -> str:
    return str(retried(lambda: driver.find_element(By.CSS_SELECTOR, css).text))


def wait_for(driver: WebDriver, css: str) -> None:
    WebDriverWait(driver, 20).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, css), f"no {css} on the page"
    )


def form_field(html: str, name: str) -> str:
    found = re.search(rf"name='{name}' value='([^']*)'", html)
    assert found, f"no {name} field on the page"
    return found.group(1)


NOTIFICATIONS_ROW = "tr[data-hop='notifications']"
DLQ_GROUP = "article.dlq[data-consumer='notifications']"


@pytest.mark.timeout(300)
def test_the_page_shows_a_backlog_and_replays_a_dead_letter_once(
    stack, email_sandbox, browser, container
) -> None:
    refused = f"refused-{uuid4().hex[:8]}@example.org"
    dead_letter_and_backlog(stack, email_sandbox, refused)
    # The API samples every hop each 5 s whether or not anyone looks: by now the
    # charts hold more than the one sample the page's own read adds.
    time.sleep(max(0.0, stack.api_started_at + 11 - time.monotonic()))
    log_in(browser, stack.base)
    the_page_shows_the_backlog_and_the_dead_letter(browser)
    session = the_session_cookie(browser)
    screenshot(browser)
    the_cookie_alone_changes_nothing(stack, session)

    # The worker is back: the backlog drains; the dead letter stays.
    stack.start("worker")
    eventually(lambda: queued_emails(stack) == 0, timeout=30)
    assert messages_to(email_sandbox, refused) == 0

    replay_from_the_page(browser, stack.base)
    eventually(lambda: messages_to(email_sandbox, refused) == 1, timeout=30)
    assert dead_letters(stack) == 0

    a_second_replay_hands_back_nothing(stack.base, session)
    time.sleep(2)  # what a second hand-back would have sent has had time to arrive
    assert messages_to(email_sandbox, refused) == 1
    assert audited(container) == [
        ("ops-page", REASON, "notifications", True, 1, 0, "finished"),
        ("ops-page", REASON, "notifications", False, 1, 1, "finished"),
        ("ops-page", REASON, "notifications", True, 0, 0, "finished"),
        ("ops-page", REASON, "notifications", False, 0, 0, "finished"),
    ]


def dead_letter_and_backlog(
    stack: Stack, email_sandbox: SandboxProcess, refused: str
) -> None:
    """One e-mail the provider refuses for good (400): a dead letter. Then the
    worker stops while students enroll: a backlog."""
    with ClubClient(stack.base) as club:
        lesson = club.lesson(capacity=10, title="Ops page")
    email_sandbox.set_knobs(fail_rate=1.0, fail_status=400)
    enroll(stack.base, lesson, refused)
    eventually(lambda: dead_letters(stack) == 1, timeout=30)
    stack.stop("worker")
    email_sandbox.reset_knobs()
    for _ in range(BACKLOG):
        enroll(stack.base, lesson, f"waits-{uuid4().hex[:8]}@example.org")
    eventually(lambda: queued_emails(stack) == BACKLOG, timeout=30)
    time.sleep(1)  # the oldest has waited a visible while


def log_in(browser: WebDriver, api: str) -> None:
    """The page asks for the token once."""
    browser.get(f"{api}/ops/")
    wait_for(browser, "#token")
    browser.find_element(By.ID, "token").send_keys(TOKEN)
    browser.find_element(By.ID, "login").click()
    wait_for(browser, "#hops")


def the_page_shows_the_backlog_and_the_dead_letter(browser: WebDriver) -> None:
    row = NOTIFICATIONS_ROW
    assert text_of(browser, f"{row} td.count") == str(BACKLOG)
    oldest = text_of(browser, f"{row} td.oldest")
    assert re.fullmatch(r"\d+(\.\d)? s", oldest), oldest
    assert text_of(browser, f"{row} td.lag").startswith(f"{BACKLOG} events, ")
    chart = retried(
        lambda: browser.find_element(
            By.CSS_SELECTOR, f"{row} svg polyline"
        ).get_attribute("points")
    )
    assert len(chart.split()) >= 2, chart  # the background sampler's, and this read
    verdict = text_of(browser, "#verdict .headline")
    assert re.match(r"Confirmation e-mail\. (On time|Late by|Never drains)", verdict)
    assert "(promise 10 s)" in verdict or "≥ service" in verdict, verdict
    assert f"{BACKLOG} e-mails queued" in text_of(browser, "#verdict ul")
    assert "1 dead letter" in text_of(browser, f"{DLQ_GROUP} h3")
    assert "400" in text_of(browser, f"{DLQ_GROUP} td.reason")


def the_session_cookie(browser: WebDriver) -> dict[str, str]:
    [cookie] = [c for c in browser.get_cookies() if c["name"] == COOKIE]
    assert cookie["httpOnly"] is True
    assert cookie["sameSite"] == "Strict"
    assert cookie["path"] == "/ops"
    assert TOKEN not in cookie["value"]
    return {COOKIE: cookie["value"]}


def screenshot(browser: WebDriver) -> None:
    ARTEFACTS.mkdir(exist_ok=True)
    shot = ARTEFACTS / "ops-page.png"
    assert browser.save_screenshot(str(shot)), "no screenshot"
    assert shot.stat().st_size > 10_000


def the_cookie_alone_changes_nothing(stack: Stack, session: dict[str, str]) -> None:
    """A POST with the cookie needs the page's CSRF token and no foreign Origin."""
    replay = {"consumer": "notifications", "reason": REASON, "batch": "1"}
    with httpx.Client(base_url=stack.base, cookies=session, timeout=10) as http:
        assert http.get("/ops/status").status_code == 200  # the session reads
        forged = http.post("/ops/dlq/replay", data=replay)
        csrf = form_field(http.get("/ops/").text, "csrf")
        cross_site = http.post(
            "/ops/dlq/replay",
            data=replay | {"csrf": csrf},
            headers={"Origin": "https://elsewhere.example"},
        )
    assert forged.status_code == 403, forged.text
    assert cross_site.status_code == 403, cross_site.text
    assert dead_letters(stack) == 1


def replay_from_the_page(browser: WebDriver, api: str) -> None:
    """Dry run first (it shows 1), then confirm (the audit record says 1)."""
    browser.get(f"{api}/ops/")
    wait_for(browser, DLQ_GROUP)

    def dry_run() -> bool:
        field = browser.find_element(By.CSS_SELECTOR, f"{DLQ_GROUP} input[name=reason]")
        field.clear()
        field.send_keys(REASON)
        browser.find_element(By.CSS_SELECTOR, f"{DLQ_GROUP} button.dry-run").click()
        return True

    retried(dry_run)
    wait_for(browser, "#dry-run")
    would = browser.find_element(By.CSS_SELECTOR, "#dry-run p.would")
    assert would.get_attribute("data-count") == "1", would.text
    assert "Would hand back 1 dead letter to notifications" in would.text
    assert len(browser.find_elements(By.CSS_SELECTOR, "#would-replay tbody tr")) == 1
    browser.find_element(By.ID, "confirm").click()
    wait_for(browser, "#replayed")
    banner = browser.find_element(By.ID, "replayed")
    assert banner.get_attribute("data-count") == "1", banner.text
    assert REASON in banner.text


def a_second_replay_hands_back_nothing(api: str, session: dict[str, str]) -> None:
    with httpx.Client(base_url=api, cookies=session, timeout=10) as http:
        csrf = form_field(http.get("/ops/").text, "csrf")
        again = {"consumer": "notifications", "reason": REASON, "csrf": csrf}
        dry = http.post("/ops/dlq/dry-run", data=again)
        replayed = http.post(
            "/ops/dlq/replay", data=again | {"batch": "1"}, follow_redirects=True
        )
    assert "data-count='0'" in dry.text, dry.text
    assert replayed.status_code == 200
    assert "id='replayed' data-count='0'" in replayed.text


def audited(container) -> list[tuple[Any, ...]]:
    """Who, why, what and how many: the page's replays as the CLI's are kept."""
    with container.engine.connect() as conn:
        rows = conn.execute(
            sa.select(
                dlq_replays.c.operator,
                dlq_replays.c.reason,
                dlq_replays.c.consumer,
                dlq_replays.c.dry_run,
                dlq_replays.c.matched,
                dlq_replays.c.replayed,
                dlq_replays.c.outcome,
            ).order_by(dlq_replays.c.started_at)
        )
        return [tuple(row) for row in rows]


def test_the_page_refuses_to_replay_what_no_consumer_reads(stack) -> None:
    """The relay's dead letters have no replay durable: handed back they would
    leave the DLQ for nowhere. Both forms say so (422), and nothing moves."""
    before = dead_letters(stack)
    for path in ("/ops/dlq/dry-run", "/ops/dlq/replay"):
        answer = httpx.post(
            f"{stack.base}{path}",
            data={"consumer": "relay", "reason": "fixed", "batch": "1"},
            headers=bearer(TOKEN),
            timeout=30,
        )
        assert answer.status_code == 422, answer.text
        assert "reads no replays" in answer.text
        assert "club relay rewind" in answer.text
    assert dead_letters(stack) == before
