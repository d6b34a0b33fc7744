"""The try page in a real browser: Debian's chromium (headless), driven by
Playwright, against the demo (``wsgi:app``, where A2A_TRY_PAGE is on) under
gunicorn with a ``flask a2a worker`` for its background agent ``slow``.

Each state is kept as a screenshot under build/test-artifacts/try-page/
(or $A2A_TEST_ARTIFACTS/try-page/); the run's summary names the folder.
Never skipped: without /usr/bin/chromium (apt-get install chromium; .ci/run
installs it) these fail."""

import os
import re

import pytest
from playwright.sync_api import expect, sync_playwright

from serving import REPO_DIR, GunicornServer, WorkerProcess

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run"]
SHOTS = os.path.join(os.environ.get("A2A_TEST_ARTIFACTS")
                     or os.path.join(REPO_DIR, "build", "test-artifacts"), "try-page")
WAIT_MS = 30000  # a bound on each wait, not a claim about speed
XSS = ('<img src=x onerror="window.__xss=\'img\'">'
       '<script>window.__xss=\'script\'</script>')


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo service (2 gunicorn workers, an API key) and its worker."""
    server = GunicornServer(tmp_path_factory.mktemp("try-page"), app="wsgi:app",
                            workers=2, auth="key")
    worker = None
    try:
        server.start()
        worker = WorkerProcess(server, "--threads", "2", "--grace", "1").start()
        yield server
    finally:
        if worker is not None:
            worker.stop()
        server.stop()
        print("server log:", server.log_path)


@pytest.fixture(scope="module")
def browser():
    assert os.access(CHROMIUM, os.X_OK), (
        "%s is missing: apt-get install chromium (.ci/run does)" % CHROMIUM)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM,
                                              args=FLAGS)
        try:
            yield chromium
        finally:
            chromium.close()


class Tab:
    """One page in a fresh browser context, its console errors collected."""

    def __init__(self, browser, demo, agent, kept_files):
        self.kept_files = kept_files
        self.context = browser.new_context(viewport={"width": 1100, "height": 1000})
        self.page = self.context.new_page()
        self.page.set_default_timeout(WAIT_MS)
        self.errors = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.key = demo.headers["Authorization"].split(" ", 1)[1]
        response = self.page.goto("%s/api/v1/agents/%s/" % (demo.url, agent))
        assert response.status == 200
        expect(self.page.locator("#agent-name")).to_have_text(agent)

    def send(self, text, key=None):
        self.page.fill("#key", self.key if key is None else key)
        self.page.fill("#text", text)
        self.page.click("#send")

    def shows(self, selector, text):
        """The element's text is ``text`` (a string or a pattern), once it is."""
        expect(self.page.locator(selector)).to_have_text(text)

    def has(self, selector, *texts):
        for text in texts:
            expect(self.page.locator(selector)).to_contain_text(text)

    def shot(self, name):
        os.makedirs(SHOTS, exist_ok=True)
        path = os.path.join(SHOTS, name + ".png")
        self.page.screenshot(path=path, full_page=True)
        self.kept_files.append(path)
        return path


@pytest.fixture
def tab(browser, demo, kept_files):
    tabs = []

    def open_tab(agent):
        tabs.append(Tab(browser, demo, agent, kept_files))
        return tabs[-1]

    yield open_tab
    for each in tabs:
        each.context.close()


def test_the_page_shows_the_card_without_a_console_error(tab):
    page = tab("chat")
    page.has("#skills", "Keeps a conversation open", "examples: hello | bye")
    page.has("#interfaces", "JSONRPC 1.0", "HTTP+JSON 1.0", "JSONRPC 0.3")
    page.has("#card-facts", "0.3, 1.0", "for callers with credentials")
    page.has("#auth", "API key in the X-API-Key header", "Authorization: Bearer")
    page.shot("1-card")
    # With a key in, the extended card: chat's skill for callers with credentials.
    page.page.fill("#key", page.key)
    page.page.press("#key", "Tab")
    page.has("#skills", "Chat with memory")
    page.has("#card-status", "The extended card")
    assert page.errors == []


def test_a_message_to_echo_shows_the_completed_answer(tab):
    page = tab("echo")
    page.send("hello from the browser")
    page.shows("#state", "completed")
    page.shows("#artifacts pre", "hello from the browser")
    history = page.page.locator("#history li")
    expect(history).to_have_count(2)
    expect(history.nth(0)).to_contain_text("user:")
    expect(history.nth(1)).to_contain_text("agent:")
    # The caller's recent tasks (ListTasks) list it, newest first.
    task_id = page.page.locator("#task-id").inner_text()
    expect(page.page.locator("#tasks tbody tr").first).to_contain_text(task_id)
    page.shot("2-echo-completed")
    assert page.errors == []


def test_a_slow_turn_shows_progress_then_done(tab):
    page = tab("slow")
    page.send("4")
    page.shows("#state", "working")
    page.shows("#status-text", re.compile(r"working: \d of 4 s"))
    page.shot("3-slow-progress")
    page.shows("#state", "completed")
    page.shows("#status-text", "done after 4 s")
    page.shows("#polling", "")
    page.shot("4-slow-done")
    assert page.errors == []


def test_html_in_a_reply_is_shown_as_text_and_runs_nothing(tab):
    page = tab("echo")
    page.send(XSS)
    page.shows("#state", "completed")
    page.shows("#artifacts pre", XSS)
    page.has("#history li >> nth=0", XSS)
    assert page.page.evaluate("typeof window.__xss") == "undefined"
    assert page.page.locator("body img").count() == 0
    assert page.page.locator("body script").count() == 1  # the page's own
    page.shot("5-html-as-text")
    assert page.errors == []


def test_a_wrong_key_shows_the_401(tab):
    page = tab("echo")
    page.send("hello", key="a2a_" + "x" * 43)
    expect(page.page.locator("#error")).to_be_visible()
    page.has("#error", "HTTP 401 Unauthorized", "The API key is not valid",
             "Check the API key")
    expect(page.page.locator("#answer")).to_be_hidden()
    page.shot("6-wrong-key-401")
