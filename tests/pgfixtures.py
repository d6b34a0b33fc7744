"""PostgreSQL for the tests: one server per session, a fresh database per test.

``postgres_server`` (session) is ``A2A_TEST_POSTGRES_URL`` when set (an
existing server whose role may create databases), else a throwaway cluster
from the machine's server binaries (``pgcluster.py``), stopped and removed at
the end of the session whatever happened. Where neither is possible the
PostgreSQL tests skip, saying why; with ``A2A_TEST_REQUIRE_POSTGRES=1`` (set
by ``.ci/run``) they fail instead, so CI never passes by skipping them.

``postgres_url`` gives each test an empty database of its own (dropped
after it), ``postgres_module_url`` one per test module.
"""

import itertools
import os
import signal
import sys

import pytest

import pgcluster

_names = itertools.count(1)


def _required():
    return os.environ.get("A2A_TEST_REQUIRE_POSTGRES", "") not in ("", "0")


def _not_here(reason):
    if _required():
        pytest.fail("PostgreSQL is required (A2A_TEST_REQUIRE_POSTGRES=1) but "
                    "not available: %s" % reason, pytrace=False)
    pytest.skip("PostgreSQL not available: %s (install postgresql-15, or set "
                "A2A_TEST_POSTGRES_URL)" % reason)


@pytest.fixture(scope="session")
def postgres_server():
    """The PostgreSQL server of this session (``pgcluster.Cluster`` API)."""
    url = os.environ.get("A2A_TEST_POSTGRES_URL")
    if url:
        try:
            import psycopg  # noqa: F401
        except ImportError:
            _not_here("psycopg is not installed (pip install -e '.[test]')")
        try:
            server = pgcluster.External(url).start()
        except Exception as exc:
            _not_here("A2A_TEST_POSTGRES_URL does not answer: %s" % exc)
        yield server
        return
    reason = pgcluster.unavailable()
    if reason:
        _not_here(reason)
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        # a terminated session still stops the cluster (pytest tears down on
        # Ctrl-C by itself; SIGTERM would end it without teardown or atexit)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    cluster = pgcluster.Cluster(settings=pgcluster.FAST)
    try:
        cluster.start()
    except Exception as exc:
        cluster.stop()
        _not_here("the throwaway cluster did not start: %s" % exc)
    try:
        yield cluster
    finally:
        cluster.stop()


def _fresh_database(server, tag):
    name = "a2a_test_%d_%d_%s" % (os.getpid(), next(_names), tag)
    url = server.create_db(name[:63])
    return name[:63], url


@pytest.fixture
def postgres_url(postgres_server):
    """The URL of an empty database of this test's own."""
    name, url = _fresh_database(postgres_server, "t")
    yield url
    postgres_server.drop_db(name)


@pytest.fixture(scope="module")
def postgres_module_url(postgres_server):
    """The URL of an empty database shared by this test module."""
    name, url = _fresh_database(postgres_server, "m")
    yield url
    postgres_server.drop_db(name)
