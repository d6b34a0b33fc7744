"""The schema version the PostgreSQL guide names is this release's."""

import os
import re

from a2a_flask.storage.postgres.migrations import EXPECTED_VERSION

DOCS = os.path.join(os.path.dirname(__file__), "..", "..", "docs")


def test_the_postgresql_guide_names_this_release_s_schema_version():
    with open(os.path.join(DOCS, "postgresql.md")) as f:
        text = f.read()
    named = re.search(r"`a2a_schema_version`: (\d+) in this release", text)
    assert named and int(named.group(1)) == EXPECTED_VERSION
