"""The storage backends the contract suite runs on (``make_storage``,
``storage``): ``sqlite``, and ``postgres`` on the session's PostgreSQL (a
throwaway cluster, or ``A2A_TEST_POSTGRES_URL``; tests/pgfixtures.py), a
fresh database per test."""

import pytest

from a2a_flask.config import Settings
from a2a_flask.storage import open_storage

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(params=BACKENDS)
def make_storage(request, tmp_path):
    """``make_storage(**config)``: a new storage object on this test's
    database, opened with the package's ``Settings`` of ``config`` (A2A_...
    names) over the defaults (call it twice for two independent connections/processes).
    PostgreSQL: skipped, or failed under A2A_TEST_REQUIRE_POSTGRES=1, when
    there is none."""
    if request.param == "sqlite":
        database = "sqlite:///" + str(tmp_path / "contract.sqlite3")
    else:
        database = request.getfixturevalue("postgres_url")
    made = []

    def make(**config):
        # The free-disk floor off, as before: a full /tmp is not the subject here.
        settings = Settings({"A2A_DATABASE": database, "A2A_MIN_FREE_DISK_BYTES": 0,
                             **config}, str(tmp_path / "instance"))
        storage = open_storage(settings)
        storage.migrate()
        made.append(storage)
        return storage

    yield make
    for storage in made:
        storage.close()


@pytest.fixture
def storage(make_storage):
    return make_storage()
