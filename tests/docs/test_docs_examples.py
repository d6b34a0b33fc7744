"""The answers the documentation shows are the service's real answers.

Every block of docs/*.md that follows a ``% example`` line is run: each of
its ``$ `` lines against a fresh demo service (``wsgi:app`` under gunicorn,
an API key in ``$KEY``, its database in ``A2A_DATABASE``), and what the
command prints must be the block's other lines, up to what differs on every
run (ids, keys, times, the port). docs/curl-session.md is the output of
docs/curl_session.sh against the same service. When the service changes
what it answers, these fail; ``A2A_DOCS_WRITE=1`` writes the new answers
into the pages instead (then read the diff)."""

import os
import re
import subprocess

import pytest

from serving import REPO_DIR, VENV_BIN, GunicornServer

DOCS = os.path.join(REPO_DIR, "docs")
WRITE = os.environ.get("A2A_DOCS_WRITE") == "1"
SHOWN_DATABASE = "/srv/a2a/instance/a2a.sqlite3"
SHOWN_HOST = "127.0.0.1:8000"

# What differs on every run, each with what both sides become.
_VARYING = [
    (re.compile(r"\b(task|ctx|msg|art)_[A-Za-z0-9_-]{20,}"), r"\1_<id>"),
    (re.compile(r"\bkey_[0-9a-f]{12}\b"), "key_<id>"),
    (re.compile(r"\ba2a_[A-Za-z0-9_-]{43}"), "a2a_<key>"),
    (re.compile(r"\ba2a_[A-Za-z0-9_-]{6}\.\.\."), "a2a_<prefix>..."),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"), "<time>"),
    (re.compile(r"\b(127\.0\.0\.1|localhost):\d+"), "<host>"),
    # Each branch that adds a migration moves it; the integrator orders them.
    (re.compile(r'"schemaVersion":\d+'), '"schemaVersion":<N>'),
    (re.compile(r"Schema version: (\d+) \(this a2a_flask: \1\)"),
     "Schema version: <N> (this a2a_flask: <N>)"),
]


def normalized(text):
    for pattern, replacement in _VARYING:
        text = pattern.sub(replacement, text)
    return [line.rstrip() for line in text.strip("\n").split("\n")]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo service with an API key; 2 workers."""
    server = GunicornServer(tmp_path_factory.mktemp("docs-demo"), app="wsgi:app",
                            workers=2, auth="key")
    try:
        yield server.start()
    finally:
        server.stop()
        print("server log:", server.log_path)


def _key(server):
    return server.headers["Authorization"].split(" ", 1)[1]


def _shell(server, command):
    """A documented command line run as its reader would, on the demo."""
    command = command.replace(".venv/bin/", "")
    for host in ("localhost:8000", "127.0.0.1:8000"):
        command = command.replace(host, "127.0.0.1:%d" % server.port)
    env = {k: v for k, v in os.environ.items() if not k.startswith("A2A_")}
    env.update(PATH=VENV_BIN + os.pathsep + env.get("PATH", ""),
               A2A_DATABASE=server.database, KEY=_key(server), BASE=server.url)
    done = subprocess.run(["bash", "-c", command], cwd=REPO_DIR, env=env,
                          capture_output=True, text=True, timeout=60)
    shown = (done.stdout + done.stderr).replace(server.database, SHOWN_DATABASE)
    return shown.replace("127.0.0.1:%d" % server.port, SHOWN_HOST)


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


_EXAMPLE = re.compile(r"^% example\n\n?((?:(?:    .*)?\n)+)", re.M)


def _examples():
    for name in sorted(os.listdir(DOCS)):
        if name.endswith(".md"):
            with open(os.path.join(DOCS, name), encoding="utf-8") as f:
                if _EXAMPLE.search(f.read()):
                    yield name


def test_the_pages_have_examples():
    assert {"operating.md", "quickstart.md", "securing.md"} <= set(_examples())


@pytest.mark.parametrize("page", list(_examples()))
def test_each_example_prints_what_the_page_shows(demo, session, page):
    path = os.path.join(DOCS, page)
    with open(path, encoding="utf-8") as f:
        text = f.read()

    def run(match):
        body = match.group(1).rstrip("\n")
        trailing = match.group(1)[len(body) + 1:]
        block = [line[4:] for line in body.split("\n")]
        out = []
        for line in block:
            if line.startswith("$ "):
                out.append(line)
                out.extend(_shell(demo, line[2:]).rstrip("\n").split("\n"))
        if not WRITE:
            assert normalized("\n".join(out)) == normalized("\n".join(block)), page
        return "% example\n\n" + "".join("    %s\n" % line if line else "\n"
                                         for line in out) + trailing

    rewritten = _EXAMPLE.sub(run, text)
    if WRITE and rewritten != text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(rewritten)
