"""The try page (A2A_TRY_PAGE) as HTTP: who gets it, what it is made of, and
that everyone else gets what they got without it.
tests/servers/test_try_page_browser.py runs it in a real browser."""

import base64
import hashlib
import re

import pytest

BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,"
                     "*/*;q=0.8"}


# In the compat subset: .ci/matrix runs it on every supported Python and Flask.
pytestmark = pytest.mark.compat


def _get(app, path, headers=None):
    return app.test_client().get(path, headers=headers or {})


@pytest.fixture
def on(make_app):
    return make_app(A2A_TRY_PAGE=True)[0]


def test_a_browser_gets_the_page_of_an_agent(on):
    response = _get(on, "/api/v1/agents/echo/", BROWSER)
    assert response.status_code == 200
    assert response.mimetype == "text/html"
    assert b"<title>Try an agent</title>" in response.data
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_the_page_is_self_contained_and_its_policy_strict(on):
    response = _get(on, "/api/v1/agents/echo/", BROWSER)
    html = response.get_data(as_text=True)
    policy = dict(part.strip().split(" ", 1)
                  for part in response.headers["Content-Security-Policy"].split(";"))
    assert policy["default-src"] == "'none'"
    assert policy["connect-src"] == "'self'"
    assert policy["require-trusted-types-for"] == "'script'"
    assert policy["frame-ancestors"] == "'none'"
    assert policy["form-action"] == "'none'"
    # Only the page's own inline script and style run: each by its hash.
    for kind in ("script", "style"):
        bodies = re.findall(r"<%s>(.*?)</%s>" % (kind, kind), html, re.S)
        assert len(bodies) == 1
        digest = base64.b64encode(hashlib.sha256(bodies[0].encode()).digest())
        assert policy[kind + "-src"] == "'sha256-%s'" % digest.decode()
    assert "unsafe" not in response.headers["Content-Security-Policy"]
    # Nothing loaded from anywhere: no src, and no href but the empty icon.
    assert re.findall(r"\s(?:src|href)=\"([^\"]*)\"", html) == ["data:,"]
    assert "innerHTML" not in html and "insertAdjacentHTML" not in html


@pytest.mark.parametrize("headers", [
    {}, {"Accept": "*/*"}, {"Accept": "application/json"},
    {"Accept": "application/json, text/html;q=0.5"}, {"Accept": "text/html;q=0"}])
def test_other_clients_get_what_they_got_without_it(make_app, headers):
    # Both apps kept alive: Flask 2.2's get_json reads its app through a
    # weak reference.
    off_app, on_app = make_app()[0], make_app(A2A_TRY_PAGE=True)[0]
    off = _get(off_app, "/api/v1/agents/echo/", headers)
    on = _get(on_app, "/api/v1/agents/echo/", headers)
    assert off.status_code == on.status_code == 404
    assert on.get_json() == off.get_json()
    assert on.get_json()["code"] == -32600


def test_off_by_default_a_browser_gets_the_json_404(make_app):
    response = _get(make_app()[0], "/api/v1/agents/echo/", BROWSER)
    assert response.status_code == 404
    assert response.mimetype == "application/json"


def test_no_page_for_an_agent_that_is_not_there(make_app):
    app = make_app(A2A_TRY_PAGE=True, A2A_DISABLED_AGENTS="chat")[0]
    for name in ("nope", "chat"):
        response = _get(app, "/api/v1/agents/%s/" % name, BROWSER)
        assert response.status_code == 404
        assert response.mimetype == "application/json"


def test_with_private_cards_every_name_has_the_same_page(make_app):
    """The page tells nothing by itself, so it cannot tell which agents
    exist to a caller the cards are hidden from."""
    app = make_app(A2A_TRY_PAGE=True, A2A_PUBLIC_CARDS=False,
                   A2A_AUTH="required")[0]
    known = _get(app, "/api/v1/agents/echo/", BROWSER)
    unknown = _get(app, "/api/v1/agents/nope/", BROWSER)
    assert known.status_code == unknown.status_code == 200
    assert known.data == unknown.data

