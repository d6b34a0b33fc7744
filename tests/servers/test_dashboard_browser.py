"""The operator's page in a real browser: Debian's chromium (headless),
driven by Playwright, against the demo (``wsgi:app``, where A2A_DASHBOARD is
on) under gunicorn, with no worker: the queued turns of ``slow`` wait.

The test makes the database's contents itself (a completed echo task, a
failure, a slow turn and a failure of tenant acme, queued turns, a dead
worker and an idle in-process one, an operator key) on the demo's SQLite
file, types the key, sees the counts, the failures, the slowest turns, the
workers and the tenants, cancels a queued task. Screenshots
under build/test-artifacts/dashboard/ (or $A2A_TEST_ARTIFACTS/dashboard/).
Never skipped: without /usr/bin/chromium these fail."""

import os
from datetime import datetime, timedelta

import pytest
from playwright.sync_api import expect, sync_playwright

from a2a_flask.auth.credentials import Credentials
from a2a_flask.config import Settings
from a2a_flask.storage import open_storage
from helpers import message
from serving import REPO_DIR, GunicornServer

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run"]
SHOTS = os.path.join(os.environ.get("A2A_TEST_ARTIFACTS")
                     or os.path.join(REPO_DIR, "build", "test-artifacts"), "dashboard")
WAIT_MS = 30000  # a bound on each wait, not a claim about speed


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    # No in-process claimers: the page must show turns that wait in the queue.
    server = GunicornServer(tmp_path_factory.mktemp("dashboard"), app="wsgi:app",
                            workers=2, auth="key", env={"A2A_IN_PROCESS_WORKER": "0",
                                                        "A2A_TENANTS": "acme"})
    try:
        yield server.start()
    finally:
        server.stop()
        print("server log:", server.log_path)


@pytest.fixture(scope="module")
def made(demo):
    """What the test put in the demo's database."""
    storage = open_storage(Settings({"A2A_DATABASE": demo.database},
                                    os.path.dirname(demo.database)))
    try:
        done = storage.start_turn("key:someone", "echo", message("hi"))
        storage.finish_turn(done.task_id, "key:someone", "echo", "completed",
                            _reply(done, "hi"))
        failed = storage.start_turn("key:someone", "chat", message("hi"))
        storage.finish_turn(failed.task_id, "key:someone", "chat", "failed",
                            _reply(failed, "The agent raised: ValueError"))
        # Tenant acme's failure, and its turn that took 75 s.
        acme = storage.start_turn("key:acme-ci", "echo", message("hi"), tenant="acme")
        storage.finish_turn(acme.task_id, "key:acme-ci", "echo", "failed",
                            _reply(acme, "The upstream API refused: 429"))
        slow = storage.start_turn("key:acme-ci", "echo", message("hi"), tenant="acme")
        storage.finish_turn(slow.task_id, "key:acme-ci", "echo", "completed",
                            _reply(slow, "late"))
        ended = datetime.strptime(storage.show_task(slow.task_id).updated_at,
                                  "%Y-%m-%dT%H:%M:%S.%fZ")
        with storage.transaction() as conn:
            conn.execute("UPDATE a2a_tasks SET created_at = ? WHERE id = ?", (
                (ended - timedelta(seconds=75)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
                + "Z", slow.task_id))
        # A worker that took a turn and went silent (its lease renewed
        # 130 s ago, its heartbeat as old), then two turns no worker takes;
        # an idle in-process claimer seen just now.
        storage.enqueue_turn("key:stuck", "slow", message("w"))
        [_] = storage.claim_turns("host-b:4242:dead", 1, -100)
        storage.note_worker("host-c:77:ab12cd:web")
        queued = [storage.enqueue_turn("key:runaway", "slow", message("w")).task_id
                  for _ in range(2)]
        _, key = Credentials(storage).create_key(set(), "on call", operator=True)
        Credentials(storage).create_key(None, "acme ci", tenant="acme")
        yield {"key": key, "failed": failed.task_id, "queued": queued,
               "storage": storage, "slow": slow.task_id}
    finally:
        storage.close()


def _reply(start, text):
    return {"kind": "message", "role": "agent", "messageId": "r-" + start.task_id,
            "parts": [{"kind": "text", "text": text}], "taskId": start.task_id,
            "contextId": start.context_id}


@pytest.fixture(scope="module")
def browser():
    assert os.access(CHROMIUM, os.X_OK), (
        "%s is missing: apt-get install chromium (.ci/run does)" % CHROMIUM)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            yield chromium
        finally:
            chromium.close()


def _shot(page, name, kept_files):
    os.makedirs(SHOTS, exist_ok=True)
    path = os.path.join(SHOTS, name + ".png")
    page.screenshot(path=path, full_page=True)
    kept_files.append(path)


def test_an_operator_sees_the_service_and_cancels_a_task(browser, demo, made, kept_files):
    context = browser.new_context(viewport={"width": 1100, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    errors = []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("dialog", lambda dialog: dialog.accept())
    try:
        response = page.goto(demo.url + "/api/v1/dashboard/")
        assert response.status == 200
        expect(page.locator("#status")).to_contain_text("Type an operator key")
        # The demo's ordinary key is no operator's: refused, nothing shown.
        page.fill("#key", demo.headers["Authorization"].split(" ", 1)[1])
        page.click("#connect")
        expect(page.locator("#error")).to_contain_text("HTTP 403")
        assert page.locator("#view").is_hidden()

        page.fill("#key", made["key"])
        page.click("#connect")
        expect(page.locator("#status")).to_contain_text("Updated")
        expect(page.locator("#error")).to_be_hidden()
        echo = page.locator('#agents tr[data-agent="echo"]')
        expect(echo).to_contain_text("completed 2")
        expect(echo).to_contain_text("3 in the hour")
        expect(page.locator('#agents tr[data-agent="chat"]')).to_contain_text("failed 1")
        expect(page.locator('#agents tr[data-agent="slow"]')).to_contain_text("working 3")
        expect(page.locator('#agents tr[data-agent="echo"] svg.chart rect')).to_have_count(1)
        expect(page.locator("#queue-depth")).to_have_text("2")
        expect(page.locator("#queue")).to_contain_text("key:runaway")
        expect(page.locator("#failures tr")).to_have_count(2)
        failure = page.locator("#failures tr", has_text="The agent raised")
        expect(failure).to_contain_text("The agent raised: ValueError")
        expect(failure.locator("a")).to_have_text(made["failed"])
        # With tenants, each row's tenant shows.
        expect(page.locator("#failures tr", has_text="key:acme-ci")
               .locator("td.tenant")).to_have_text("acme")
        expect(page.locator("#keys tr", has_text="acme ci")
               .locator("td.tenant")).to_have_text("acme")
        expect(failure.locator("td.tenant")).to_be_visible()
        slowest = page.locator("#slowest tr").first
        expect(slowest).to_contain_text("75 s")
        expect(slowest.locator("td.tenant")).to_have_text("acme")
        expect(slowest.locator("a")).to_have_text(made["slow"])
        # Every task link goes to a row of the page: a failure's to its row
        # in the failures (which says why), any other to its own.
        links = page.eval_on_selector_all(
            "#failures a, #slowest a", "links => links.map(link => [link.textContent,"
            " link.getAttribute('href'), !!document.getElementById("
            "decodeURIComponent(link.getAttribute('href').slice(1)))])")
        assert len(links) == 6 and all(found for _, _, found in links), links
        hrefs = {task_id: href for task_id, href, _ in links}
        assert hrefs[made["slow"]] == "#slow-" + made["slow"]
        assert hrefs[made["failed"]] == "#task-" + made["failed"]
        # The key of this page's own requests is shown used, at once.
        assert "never" not in page.locator("#keys tr", has_text="on call").inner_text()
        dead = page.locator("#workers tr", has_text="host-b:4242:dead")
        expect(dead.locator("td.bad")).to_contain_text("none seen for 1")  # 130 s or so
        idle = page.locator("#workers tr", has_text="host-c:77:ab12cd:web")
        expect(idle).to_contain_text("(in-process)")
        expect(idle.locator("td.bad")).to_have_count(0)
        expect(page.locator("#worker-note")).to_have_class("bad")
        expect(page.locator("#keys")).to_contain_text("on call")
        expect(page.locator("#settings")).to_contain_text("schema version")
        _shot(page, "1-overview", kept_files)
        # Clicked after the picture (docs/images/dashboard.png is it): no outline there.
        slowest.locator("a").click()
        expect(page.locator("#slowest tr:target")).to_contain_text("75 s")

        page.fill("#cancel-task-id", made["queued"][0])
        page.click("#cancel-task")
        expect(page.locator("#done")).to_contain_text("1 canceled")
        expect(page.locator("#queue-depth")).to_have_text("1")
        expect(page.locator('#agents tr[data-agent="slow"]')).to_contain_text("canceled 1")
        expect(page.locator('#agents tr[data-agent="slow"]')).to_contain_text("working 2")
        assert made["storage"].show_task(made["queued"][0]).state == "canceled"
        assert made["storage"].show_task(made["queued"][1]).state == "working"
        _shot(page, "2-task-canceled", kept_files)

        # The refresh (every 5 s) shows what changed without a reload.
        made["storage"].enqueue_turn("key:other", "slow", message("w"))
        expect(page.locator("#queue-depth")).to_have_text("2", timeout=12000)

        page.set_viewport_size({"width": 390, "height": 900})
        expect(page.locator("#queue-depth")).to_have_text("2")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, width  # no sideways scrolling of the page
        _shot(page, "3-narrow-390px", kept_files)
        # Only the two refusals above (the browser logs each), no CSP
        # violation nor script error.
        refusals = [e for e in errors if "Failed to load resource" in e]
        assert len(refusals) == 2 and "401" in refusals[0] and "403" in refusals[1]
        assert [e for e in errors if e not in refusals] == []
    finally:
        context.close()
