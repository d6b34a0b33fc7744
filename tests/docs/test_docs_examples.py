"""The answers the documentation shows are the service's real answers, and
the guides' code runs.

Every block of docs/*.md that follows a ``% example`` line is run: its
``$ `` lines against a fresh demo service (``wsgi:app`` under gunicorn, an
API key in ``$KEY``, its database in ``A2A_DATABASE``), one page's lines as
in one terminal (a variable a line sets is there for the next), and what
the commands print must be the block's other lines, up to what differs on
every run (ids, keys, times, the port). A line ending in ``&`` starts a
server or worker in the background (its output is not shown; one given
``-b HOST:PORT`` is waited for), stopped at the page's end. A fenced block
after ``% file: NAME`` is saved as NAME in a folder of the page's own, the
reader's project: from there on the page's commands run in that folder,
without the demo's database. Ports: 8000 is the demo, any other port shown
a free one. docs/curl-session.md is the output of docs/curl_session.sh
against the same service.

In the guides (``GUIDES``) every code block is one of those, or opts out
with a ``% not-run: reason`` line: at most ``MAX_NOT_RUN`` in all the docs.

When the service changes what it answers, these fail; ``A2A_DOCS_WRITE=1``
writes the new answers into the pages instead (then read the diff)."""

import os
import re
import shlex
import signal
import socket
import subprocess
import time

import pytest

from serving import (
    REPO_DIR, VENV_BIN, GunicornServer, _gunicorn_has_control_socket, free_port,
)

DOCS = os.path.join(REPO_DIR, "docs")
WRITE = os.environ.get("A2A_DOCS_WRITE") == "1"
SHOWN_DATABASE = "/srv/a2a/instance/a2a.sqlite3"
SHOWN_HOST = "127.0.0.1:8000"
#: The pages a newcomer follows: every code block of theirs runs.
GUIDES = ["quickstart.md", "agents.md", "client.md", "background.md",
          "curl-session.md"]
MAX_NOT_RUN = 5

# What differs on every run, each with what both sides become.
_VARYING = [
    (re.compile(r"\b(task|ctx|msg|art)_[A-Za-z0-9_-]{20,}"), r"\1_<id>"),
    (re.compile(r"\bkey_[0-9a-f]{12}\b"), "key_<id>"),
    (re.compile(r"\ba2a_[A-Za-z0-9_-]{43}"), "a2a_<key>"),
    (re.compile(r"\ba2a_[A-Za-z0-9_-]{6}\.\.\."), "a2a_<prefix>..."),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"), "<time>"),
    (re.compile(r"\b(127\.0\.0\.1|localhost):\d+"), "<host>"),
    # Migrations are added in parallel: the pages show one version, the
    # tests of the schema check the number.
    (re.compile(r'"schemaVersion": ?\d+'), '"schemaVersion":<version>'),
    (re.compile(r"(Schema version:|this a2a_flask:) \d+"), r"\1 <version>"),
]


def normalized(text):
    for pattern, replacement in _VARYING:
        text = pattern.sub(replacement, text)
    return [line.rstrip() for line in text.strip("\n").split("\n")]


def _demo(folder):
    """The demo service with an API key; 2 workers."""
    server = GunicornServer(folder, app="wsgi:app", workers=2, auth="key")
    try:
        yield server.start()
    finally:
        server.stop()
        print("server log:", server.log_path)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    yield from _demo(tmp_path_factory.mktemp("docs-demo"))


@pytest.fixture(scope="module")
def guides_demo(tmp_path_factory):
    """The guides' own demo: the keys and tasks they make are not in what
    the other pages list (``keys list``, ``tasks list``)."""
    yield from _demo(tmp_path_factory.mktemp("docs-guides-demo"))


def _key(server):
    return server.headers["Authorization"].split(" ", 1)[1]


_GENERATED = "% Below: the output of docs/curl_session.sh (tests/docs/test_docs_examples.py).\n"


@pytest.fixture(scope="module")
def session(demo):
    """What docs/curl_session.sh prints against the demo, run once: the
    other examples (tasks list) show the tasks it leaves."""
    done = subprocess.run(["bash", os.path.join(DOCS, "curl_session.sh"), demo.url,
                           _key(demo)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.replace("127.0.0.1:%d" % demo.port, SHOWN_HOST)


def test_the_curl_session_is_the_service_answering(session):
    path = os.path.join(DOCS, "curl-session.md")
    with open(path, encoding="utf-8") as f:
        intro, marker, shown = f.read().partition(_GENERATED)
    assert marker, "the marker line is missing from " + path
    assert "\"state\": \"completed\"" in session
    if WRITE:
        with open(path, "w", encoding="utf-8") as f:
            f.write(intro + marker + "\n" + session)
    else:
        assert normalized(session) == normalized(shown)


_EXAMPLE = re.compile(r"^% example\n\n?((?:(?:    [^\n]*)?\n)+)", re.M)
_FILE = re.compile(r"^% file: (\S+)\n\n?```[^\n]*\n([\s\S]*?\n)```\n", re.M)
_HOST_PORT = re.compile(r"\b(127\.0\.0\.1|localhost):(\d+)\b")
_BACKGROUND = re.compile(r"\s&\s*(#.*)?$")


class _Terminal:
    """One page's commands, run as its reader would in one terminal."""

    def __init__(self, server, folder):
        self.server, self.folder = server, str(folder)
        self.cwd = REPO_DIR
        self.state = os.path.join(self.folder, ".terminal-state")
        self.ports = {"8000": str(server.port)}  # shown -> real
        self.background = []
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("A2A_")}
        self.env.update(PATH=VENV_BIN + os.pathsep + self.env.get("PATH", ""),
                        A2A_DATABASE=server.database, KEY=_key(server),
                        BASE=server.url)
        if _gunicorn_has_control_socket():  # one socket path per user: not shared
            self.env["GUNICORN_CMD_ARGS"] = "--no-control-socket"

    def real(self, text):
        """``text`` with each port shown replaced by the one in use."""
        def port(match):
            if match.group(2) not in self.ports:
                self.ports[match.group(2)] = str(free_port())
            return "127.0.0.1:" + self.ports[match.group(2)]
        return _HOST_PORT.sub(port, text)

    def shown(self, text):
        text = text.replace(self.server.database, SHOWN_DATABASE)
        for shown, real in self.ports.items():
            text = text.replace("127.0.0.1:" + real, "127.0.0.1:" + shown)
        return text

    def save(self, name, content):
        """A file of the reader's project: from now on, its folder is theirs."""
        with open(os.path.join(self.folder, name), "w", encoding="utf-8") as f:
            f.write(self.real(content))
        if self.cwd != self.folder:
            self.cwd = self.folder
            self.env.pop("A2A_DATABASE")
            if os.path.exists(self.state):  # what the demo's lines exported
                with open(self.state) as f:
                    kept = [line for line in f if " A2A_DATABASE=" not in line]
                with open(self.state, "w") as f:
                    f.writelines(kept)

    def _script(self, command):
        # set -a: an assignment is exported, so export -p carries it on.
        return ("set -a\n[ -f {state} ] && . {state}\n{command}\n__status=$?\n"
                "export -p > {state}\nexit $__status\n").format(
                    state=shlex.quote(self.state), command=command)

    def run(self, command):
        """What ``command`` prints, as the page would show it."""
        command = self.real(command.replace(".venv/bin/", ""))
        if _BACKGROUND.search(command):
            self._start(_BACKGROUND.sub("", command))
            return ""
        done = subprocess.run(["bash", "-c", self._script(command)], cwd=self.cwd,
                              env=self.env, capture_output=True, text=True, timeout=60)
        return self.shown(done.stdout + done.stderr)

    def _start(self, command):
        log = open(os.path.join(self.folder, "background-%d.log" % len(self.background)),
                   "w")
        process = subprocess.Popen(
            ["bash", "-c", "set -a\n[ -f {0} ] && . {0}\nexec {1}".format(
                shlex.quote(self.state), command)],
            cwd=self.cwd, env=self.env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
        self.background.append((process, log))
        bind = re.search(r"-b\s+(\S+):(\d+)", command)
        if bind:
            limit = time.monotonic() + 20
            while True:
                try:
                    socket.create_connection((bind.group(1), int(bind.group(2))),
                                             timeout=1).close()
                    return
                except OSError:
                    assert process.poll() is None and time.monotonic() < limit, (
                        command, open(log.name).read())
                    time.sleep(0.1)

    def close(self):
        for process, log in self.background:
            try:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(10)
            except ProcessLookupError:
                pass
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
            log.close()


def _examples():
    for name in sorted(os.listdir(DOCS)):
        if name.endswith(".md"):
            with open(os.path.join(DOCS, name), encoding="utf-8") as f:
                if _EXAMPLE.search(f.read()):
                    yield name


def test_the_pages_have_examples():
    assert {"operating.md", "quickstart.md", "securing.md"} | set(GUIDES) - {
        "curl-session.md"} <= set(_examples())


@pytest.mark.parametrize("page", list(_examples()))
def test_each_example_prints_what_the_page_shows(request, page, tmp_path):
    path = os.path.join(DOCS, page)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if page in GUIDES:
        server = request.getfixturevalue("guides_demo")
    else:  # these show what the session leaves
        request.getfixturevalue("session")
        server = request.getfixturevalue("demo")
    terminal = _Terminal(server, tmp_path)

    def run(match):
        if match.group(0).startswith("% file:"):
            terminal.save(match.group(1), match.group(2))
            return match.group(0)
        body = match.group(3).rstrip("\n")
        trailing = match.group(3)[len(body) + 1:]
        block = [line[4:] for line in body.split("\n")]
        out = []
        for line in block:
            if line.startswith("$ "):
                out.append(line)
                shown = terminal.run(line[2:]).rstrip("\n")
                if shown:
                    out.extend(shown.split("\n"))
        if not WRITE:
            assert normalized("\n".join(out)) == normalized("\n".join(block)), page
        return "% example\n\n" + "".join("    %s\n" % line if line else "\n"
                                         for line in out) + trailing

    steps = re.compile("(?:%s)|(?:%s)" % (_FILE.pattern, _EXAMPLE.pattern), re.M)
    try:
        rewritten = steps.sub(run, text)
    finally:
        terminal.close()
    if WRITE and rewritten != text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(rewritten)


# -- every block of the guides runs ------------------------------------------------

def _blocks(text):
    """(line number, the marker line before it) of each code block: fenced,
    or indented four spaces after a paragraph that is no list item."""
    lines = text.split("\n")
    blocks, fenced, previous = [], False, ""
    for number, line in enumerate(lines):
        if line.startswith("```"):
            if not fenced:
                blocks.append((number + 1, previous))
            fenced = not fenced
        elif not fenced and line.startswith("    ") and line.strip() and \
                number and not lines[number - 1].strip():
            before = [x for x in lines[:number] if x.strip()]
            last = before[-1] if before else ""
            if last.startswith("% ") or (last[:1] not in ("", " ")
                                         and not re.match(r"([-*]|\d+\.) ", last)):
                blocks.append((number + 1, last))
        if line.strip() and not fenced:
            previous = line
    return blocks


def _marker_ok(page, text, line, marker):
    if marker == "% example" or marker.startswith("% not-run: "):
        return True
    if marker.startswith("% file: "):
        stem = os.path.splitext(marker.split(": ", 1)[1])[0]
        later = "\n".join(text.split("\n")[line:])
        commands = [x for x in later.split("\n") if x.startswith("    $ ")]
        return any(re.search(r"\b%s\b" % re.escape(stem), x) for x in commands)
    return False


@pytest.mark.parametrize("page", GUIDES)
def test_every_block_of_the_guides_runs(page):
    with open(os.path.join(DOCS, page), encoding="utf-8") as f:
        text = f.read()
    if page == "curl-session.md":  # below the marker: curl_session.sh's output
        text = text.partition(_GENERATED)[0]
    blocks = _blocks(text)
    assert page == "curl-session.md" or blocks, page
    unrun = ["%s:%d (after %r)" % (page, line, marker) for line, marker in blocks
             if not _marker_ok(page, text, line, marker)]
    assert unrun == [], "blocks that no test runs (mark % example, % file: NAME " \
        "used by a later $ line, or % not-run: reason)"


def test_few_blocks_opt_out():
    opted = []
    for name in sorted(os.listdir(DOCS)):
        if name.endswith(".md"):
            with open(os.path.join(DOCS, name), encoding="utf-8") as f:
                opted += [(name, line) for line in f if line.startswith("% not-run:")]
    assert len(opted) <= MAX_NOT_RUN, opted
    assert all(line.split(":", 1)[1].strip() for _, line in opted), opted


def test_the_block_finder_finds_each_kind():
    """A test of the test: _blocks sees fenced and indented blocks, not a
    list item's continuation."""
    text = ("Text:\n\n    $ one\n\n- item\n\n    more of the item\n\n"
            "% file: a.py\n\n```python\nx = 1\n```\n\n% not-run: why\n\n    pip x\n")
    assert [marker for _, marker in _blocks(text)] == ["Text:", "% file: a.py",
                                                      "% not-run: why"]
