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

    def __init__(self, browser, demo, agent, kept_files, width=1100, height=1000):
        self.kept_files = kept_files
        self.context = browser.new_context(viewport={"width": width, "height": height})
        self.page = self.context.new_page()
        self.page.set_default_timeout(WAIT_MS)
        self.errors = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.key = demo.headers["Authorization"].split(" ", 1)[1]
        self.posts = []  # the page's calls to the agent's endpoint
        self.page.on("request", lambda r: r.method == "POST" and r.url.endswith(
            "/a2a") and self.posts.append(r.post_data))
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

    def shot(self, name, full_page=True):
        os.makedirs(SHOTS, exist_ok=True)
        path = os.path.join(SHOTS, name + ".png")
        self.page.screenshot(path=path, full_page=full_page)
        self.kept_files.append(path)
        return path


@pytest.fixture
def tab(browser, demo, kept_files):
    tabs = []

    def open_tab(agent, **viewport):
        tabs.append(Tab(browser, demo, agent, kept_files, **viewport))
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
    # The recent tasks say what the answer says (not the state the list was
    # read in, queued), in the same moment.
    task_id = page.page.locator("#task-id").inner_text()
    row = page.page.locator("#tasks tbody tr", has_text=task_id)
    expect(row).to_contain_text(re.compile(r"working: \d of 4 s"))
    answer, listed = page.page.evaluate("""id => [
        [document.getElementById("state").textContent,
         document.getElementById("status-text").textContent],
        Array.from(Array.from(document.querySelectorAll("#tasks tbody tr"))
                   .find(row => row.cells[0].textContent === id).cells)
             .filter((c, i) => i === 1 || i === 3).map(c => c.textContent)]""",
        task_id)
    assert answer == listed, (answer, listed)
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


def test_the_form_is_in_the_first_screen_at_1280x800(tab):
    page = tab("chat", width=1280, height=800)
    page.has("#skills", "Keeps a conversation open")
    for selector in ("#key", "#text", "#send"):
        box = page.page.locator(selector).bounding_box()
        assert box is not None and box["y"] >= 0, (selector, box)
    form = page.page.locator("#send-form").bounding_box()
    assert form["y"] + form["height"] <= 800, form
    page.shot("7-first-screen-1280x800", full_page=False)
    assert page.errors == []


# Every element shown, as the page lays it out: none reaches past the
# viewport's right edge, and the page does not scroll sideways.
OVERFLOW = """width => {
    const wide = [];
    for (const node of document.body.querySelectorAll("*")) {
        const box = node.getBoundingClientRect();
        if (box.width === 0 && box.height === 0) continue;
        if (box.right > width + 0.5 || box.left < -0.5)
            wide.push(node.tagName + "#" + node.id + "." + node.className + " " +
                      Math.round(box.left) + ".." + Math.round(box.right));
    }
    return [document.documentElement.scrollWidth, wide];
}"""


def test_readable_at_390_px(tab):
    page = tab("chat", width=390, height=844)
    page.has("#interfaces", "JSONRPC 1.0")
    page.send("hello from a phone")
    page.shows("#state", "input-required")
    expect(page.page.locator("#tasks tbody tr").first).to_be_visible()
    scroll_width, wide = page.page.evaluate(OVERFLOW, 390)
    assert (scroll_width, wide) == (390, []), wide[:10]
    # The interface URLs (the longest words of the page) stay inside it.
    urls = page.page.locator("#interfaces code")
    assert urls.count() >= 3
    for n in range(urls.count()):
        box = urls.nth(n).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    page.shot("8-phone-390")
    assert page.errors == []


def test_with_auth_on_no_key_asks_for_one_and_sends_nothing(tab):
    page = tab("echo")
    # Said before any send: the key field's hint.
    page.has("#key-hint", "Type your API key to send")
    page.send("hello", key="")
    expect(page.page.locator("#error")).to_be_visible()
    page.has("#error", "Type your API key first")
    assert "header" not in page.page.locator("#error").inner_text().lower()
    expect(page.page.locator("#key")).to_be_focused()
    expect(page.page.locator("#answer")).to_be_hidden()
    page.shot("9-no-key")
    assert page.posts == []  # nothing was sent: not even a refused call
    # With the key typed in, the same form sends.
    page.send("hello")
    page.shows("#state", "completed")
    expect(page.page.locator("#error")).to_be_hidden()
    assert len(page.posts) >= 1


def test_no_raw_backticks_and_commands_shown_as_code(tab):
    page = tab("chat")
    page.has("#auth", "An API key made with flask a2a keys create")
    assert page.page.locator("#auth code", has_text="flask a2a keys create").count() == 1
    assert "`" not in page.page.locator("body").inner_text()


def test_the_agents_list_moves_between_the_agents_pages(tab):
    page = tab("echo")
    expect(page.page.locator("#agents")).to_be_hidden()  # listed with a key
    page.page.fill("#key", page.key)
    page.page.press("#key", "Tab")
    links = page.page.locator("#agent-links a")
    expect(links).to_have_text(["chat", "echo", "slow"])
    expect(page.page.locator('#agent-links a[aria-current="page"]')).to_have_text("echo")
    page.shot("10-agents-list")
    page.page.click("#agent-links a >> text=slow")
    page.shows("#agent-name", "slow")
    assert page.page.url.endswith("/api/v1/agents/slow/")
    assert page.errors == []


def test_with_auth_off_no_key_field_and_the_agents_listed(
        browser, tmp_path, kept_files):
    server = GunicornServer(tmp_path / "open", app="wsgi:app", auth="off")
    server.headers["Authorization"] = "Bearer unused"  # Tab reads a key
    try:
        server.start()
        page = Tab(browser, server, "echo", kept_files)
        expect(page.page.locator("#no-key")).to_be_visible()
        expect(page.page.locator("#key-row")).to_be_hidden()
        expect(page.page.locator("#agent-links a")).to_have_text(["chat", "echo", "slow"])
        page.page.fill("#text", "no key needed")
        page.page.click("#send")
        page.shows("#state", "completed")
        page.shows("#artifacts pre", "no key needed")
        page.shot("11-auth-off")
        assert page.errors == []
        page.context.close()
    finally:
        server.stop()
