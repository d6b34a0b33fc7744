"""Shared fixtures: an app per test, a JSON-RPC client that checks every
answer against the official A2A 0.3.0 JSON schema (tests/helpers.py), real
gunicorn servers (tests/serving.py), PostgreSQL (tests/pgfixtures.py)."""

import os
import weakref

import pytest
from flask import Flask

from a2a_flask import A2A
from a2a_flask.demo import register_demo_agents
from helpers import Rpc, register_scripted
from pgfixtures import postgres_module_url, postgres_server, postgres_url  # noqa: F401


@pytest.fixture
def make_app(tmp_path):
    """Build an app with the demo agents echo and chat (not the background
    ``slow``): ``make_app(**config) -> (app, a2a)``. Each app's storage is
    closed at teardown: a PostgreSQL one's listening thread would otherwise
    try, once a second for the rest of the run, a database dropped since."""
    built = []

    def build(register=None, **config):
        app = Flask("a2a_test", instance_path=str(tmp_path / "instance"))
        app.config.update(A2A_DATABASE=str(tmp_path / "a2a.sqlite3"),
                          A2A_AUTH="off", A2A_DEFAULT_AGENT="chat")
        app.config.update(config)
        a2a = A2A(app)
        register_demo_agents(a2a, slow_agent=False)
        if register is not None:
            register(a2a)
        storage = app.extensions["a2a"].storage
        # A SQLite app the test dropped stays dropped (its descriptors are
        # counted); a PostgreSQL one's listening thread outlives it.
        if type(storage).__module__.startswith("a2a_flask.storage.postgres"):
            built.append(lambda storage=storage: storage)
        else:
            built.append(weakref.ref(storage))
        return app, a2a

    yield build
    for ref in built:
        storage = ref()
        if storage is not None:
            storage.close()


@pytest.fixture
def app(make_app):
    return make_app()[0]


@pytest.fixture
def rpc(app):
    return Rpc(app.test_client())


# -- real gunicorn processes (tests/serving.py, tests/servers/) ---------------


@pytest.fixture
def start_server(tmp_path):
    """``start_server(app="server_app:app", workers=1, env=None, headers=None,
    database=None, auth=None) -> GunicornServer``, started and answering;
    every server it started is stopped (its process group killed) at teardown."""
    from serving import GunicornServer

    servers = []

    def start(app="server_app:app", workers=1, **options):
        server = GunicornServer(tmp_path / ("server%d" % len(servers)), app=app,
                                workers=workers, **options)
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        server.stop()
        print("server log:", server.log_path)  # shown when the test failed


def _module_server(tmp_path_factory, app, workers):
    from serving import GunicornServer

    server = GunicornServer(tmp_path_factory.mktemp("server"), app=app,
                            workers=workers)
    try:
        yield server.start()
    finally:
        server.stop()
        print("server log:", server.log_path)


@pytest.fixture(scope="module")
def live_server(tmp_path_factory):
    """One ``server_app:app`` (demo + test agents), 2 workers, per test module."""
    yield from _module_server(tmp_path_factory, "server_app:app", 2)


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory):
    """One demo service (``wsgi:app``), 2 workers, per test module."""
    yield from _module_server(tmp_path_factory, "wsgi:app", 2)


@pytest.fixture
def make_rpc(make_app):
    """``make_rpc(register=None, agent="echo", **config) -> Rpc``; the app and
    the extension are ``rpc.app`` and ``rpc.a2a``."""

    def build(register=None, agent="echo", **config):
        app, a2a = make_app(register, **config)
        client = Rpc(app.test_client(), agent=agent)
        client.app, client.a2a = app, a2a
        return client

    return build


@pytest.fixture
def keyed(make_app):
    """``keyed(*labels, register=None, agent="echo", version="1.0", **config)
    -> [Rpc, ...]``: an app (A2A_AUTH=required unless ``config`` says
    otherwise) with an API key of every agent per label ("a" when none is
    given), and a client of each key on one test client; each has ``.app``,
    ``.a2a``, ``.key`` (the secret) and ``.key_id``."""

    def build(*labels, register=None, agent="echo", version="1.0", **config):
        config.setdefault("A2A_AUTH", "required")
        app, a2a = make_app(register, **config)
        credentials = app.extensions["a2a"].credentials
        client = app.test_client()
        clients = []
        for label in labels or ("a",):
            made, secret = credentials.create_key(None, label)
            caller = Rpc(client, agent=agent, key=secret, version=version)
            caller.app, caller.a2a, caller.key, caller.key_id = app, a2a, secret, made.id
            clients.append(caller)
        return clients

    return build


@pytest.fixture
def script(make_rpc):
    """An Rpc on agent ``script`` (see ``scripted``); ``script.a2a.turns``."""
    return make_rpc(register_scripted, agent="script")


#: Files tests keep for people to look at (screenshots), by the ``kept_files``
#: fixture; the run's summary names their folders.
_KEPT = pytest.StashKey[list]()


def pytest_configure(config):
    config.stash[_KEPT] = []


@pytest.fixture(scope="session")
def kept_files(pytestconfig):
    """A list: append the path of each file a test keeps as an artifact."""
    return pytestconfig.stash[_KEPT]


def pytest_terminal_summary(terminalreporter, config):
    kept = config.stash.get(_KEPT, [])
    if kept:
        terminalreporter.write_sep("-", "test artifacts")
        for folder in sorted({os.path.dirname(path) for path in kept}):
            terminalreporter.write_line("%s (%d files)" % (folder, sum(
                os.path.dirname(path) == folder for path in kept)))
