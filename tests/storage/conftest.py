"""The storage backends the contract suite runs on (``make_storage``,
``storage``): ``sqlite`` always; ``postgres`` when ``A2A_TEST_POSTGRES_URL``
names a server."""

import os

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
    database (call it twice for two independent connections/processes)."""
    if request.param == "sqlite":
        database = "sqlite:///" + str(tmp_path / "contract.sqlite3")
    else:
        database = os.environ.get("A2A_TEST_POSTGRES_URL")
        if not database:
            pytest.skip("no PostgreSQL: set A2A_TEST_POSTGRES_URL")
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
