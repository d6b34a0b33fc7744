"""The shims of a2a_flask/compat.py, one test each, run on every leg of the
compatibility matrix (.ci/matrix): each passes on the Flask/Werkzeug it is
there for and on the newest."""

import pytest
from flask import Blueprint, Flask

from a2a_flask import compat

pytestmark = pytest.mark.compat


@pytest.mark.parametrize("host, trusted", [
    ("agents.example.com", True), ("agents.example.com:8443", True),
    ("api.agents.example.com", True), ("evil.example", False),
    ("agents.example.com.evil.example", False),
])
def test_host_is_trusted(host, trusted):
    listed = ["agents.example.com", ".agents.example.com"]
    assert compat.host_is_trusted(host, listed) is trusted


def test_registered_name_is_the_blueprints_own_when_not_renamed():
    seen = []
    blueprint = Blueprint("agents", __name__)
    blueprint.record(lambda state: seen.append(compat.registered_name(state)))
    Flask(__name__).register_blueprint(blueprint)
    assert seen == ["agents"]


def test_only_compat_checks_versions():
    """No other module of the package looks at a version of Flask or
    Werkzeug: the differences live in compat.py."""
    import pathlib
    import re

    package = pathlib.Path(compat.__file__).parent
    pattern = re.compile(r"(flask|werkzeug)\.__version__|"
                         r"version\(\s*[\"'](flask|werkzeug)|"
                         r"from werkzeug\.(sansio|wsgi) import", re.I)
    offenders = [str(path.relative_to(package)) for path in package.rglob("*.py")
                 if path.name != "compat.py" and pattern.search(path.read_text())]
    assert offenders == []
