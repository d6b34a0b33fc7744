"""The storage backends the contract suite runs on (``make_storage``,
``storage``): ``sqlite``, and ``postgres`` on the session's PostgreSQL (a
throwaway cluster, or ``A2A_TEST_POSTGRES_URL``; tests/pgfixtures.py), a
fresh database per test."""

import pytest

from a2a_flask.storage import open_storage

BACKENDS = ["sqlite", "postgres"]


class _Settings:
    """The settings ``open_storage`` reads."""

    def __init__(self, database, stale_turn_seconds=3600):
        self.database = database
        self.busy_timeout_ms = 5000
        self.sqlite_synchronous = "NORMAL"
        self.stale_turn_seconds = stale_turn_seconds
        self.auto_migrate = True


@pytest.fixture(params=BACKENDS)
def make_storage(request, tmp_path):
    """``make_storage(**settings)``: a new storage object on this test's
    database (call it twice for two independent connections/processes).
    PostgreSQL: skipped, or failed under A2A_TEST_REQUIRE_POSTGRES=1, when
    there is none."""
    if request.param == "sqlite":
        database = "sqlite:///" + str(tmp_path / "contract.sqlite3")
    else:
        database = request.getfixturevalue("postgres_url")
    made = []

    def make(**settings):
        storage = open_storage(_Settings(database, **settings))
        storage.migrate()
        made.append(storage)
        return storage

    yield make
    for storage in made:
        storage.close()


@pytest.fixture
def storage(make_storage):
    return make_storage()
