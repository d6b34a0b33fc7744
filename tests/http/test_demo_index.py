"""The demo's index at ``/`` (a2a_flask/demo.py ``add_index``, which wsgi.py
calls): each agent with the URL to give a client, its card and its try page,
as a page or as JSON. tests/docs runs it under gunicorn (docs/quickstart.md)."""

import base64
import hashlib
import re

import pytest

from a2a_flask import demo as demo_agents
from a2a_flask.demo import add_index

BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,"
                     "*/*;q=0.8"}
JSON = {"Accept": "application/json"}
CARD = "/.well-known/agent-card.json"


def _urls(name, try_page=True):
    base = "http://localhost/api/v1/agents/" + name
    return {"url": base + "/", "card": base + CARD, "endpoint": base + "/a2a",
            "tryPage": base + "/" if try_page else None}


def _described(name):
    return getattr(demo_agents, name).__doc__.split("\n")[0]


@pytest.fixture
def demo(make_app):
    app = make_app(A2A_TRY_PAGE=True)[0]
    add_index(app)
    return app


def test_json_names_each_agent_with_its_urls(demo):
    response = demo.test_client().get("/", headers=JSON)
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["Vary"] == "Accept"
    assert response.get_json() == {"agents": [
        dict(name="chat", description=_described("chat"), **_urls("chat")),
        dict(name="echo", description=_described("echo"), **_urls("echo"))],
        "dashboard": None}


def test_the_page_names_each_agent_with_its_urls_and_try_link(demo):
    for headers in (BROWSER, {}, {"Accept": "*/*"}):
        response = demo.test_client().get("/", headers=headers)
        assert response.status_code == 200
        assert response.mimetype == "text/html"
        html = response.get_data(as_text=True)
        for name in ("chat", "echo"):
            urls = _urls(name)
            assert "URL to give a client: <code>%s</code>" % urls["url"] in html
            assert '<a href="%s">%s</a>' % (urls["card"], urls["card"]) in html
            assert '<a href="%s">Try %s in this browser</a>' % (
                urls["tryPage"], name) in html


def test_the_page_runs_nothing_and_loads_nothing(demo):
    response = demo.test_client().get("/", headers=BROWSER)
    html = response.get_data(as_text=True)
    policy = dict(part.strip().split(" ", 1)
                  for part in response.headers["Content-Security-Policy"].split(";"))
    assert policy["default-src"] == "'none'"
    assert policy["frame-ancestors"] == "'none'"
    assert policy["form-action"] == "'none'"
    assert "script-src" not in policy and "<script" not in html
    [style] = re.findall(r"<style>(.*?)</style>", html, re.S)
    digest = base64.b64encode(hashlib.sha256(style.encode()).digest()).decode()
    assert policy["style-src"] == "'sha256-%s'" % digest
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "no-referrer"


def test_names_and_descriptions_are_escaped(make_app):
    def register(a2a):
        a2a.add_agent('x<b onmouseover="1">&\'', lambda turn: "hi",
                      description="<script>alert(1)</script>")

    app = make_app(register)[0]
    add_index(app)
    html = app.test_client().get("/", headers=BROWSER).get_data(as_text=True)
    assert "<script>" not in html and "<b " not in html
    assert "x&lt;b onmouseover=&#34;1&#34;&gt;&amp;&#39;" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_without_the_try_page_no_try_link(make_app):
    app = make_app()[0]
    add_index(app)
    client = app.test_client()
    assert client.get("/", headers=JSON).get_json()["agents"][1] == dict(
        name="echo", description=_described("echo"), **_urls("echo", try_page=False))
    assert "Try " not in client.get("/", headers=BROWSER).get_data(as_text=True)


def test_where_cards_are_not_public_it_names_only_the_list(make_app):
    app = make_app(A2A_PUBLIC_CARDS=False, A2A_AUTH="required")[0]
    add_index(app)
    client = app.test_client()
    assert client.get("/", headers=JSON).get_json() == {
        "agents": None, "list": "http://localhost/api/v1/agents", "dashboard": None}
    html = client.get("/", headers=BROWSER).get_data(as_text=True)
    assert "echo" not in html and "chat" not in html
    assert "<code>http://localhost/api/v1/agents</code>" in html


def test_the_public_base_url_is_the_one_shown(make_app):
    app = make_app(A2A_PUBLIC_BASE_URL="https://a2a.example.com")[0]
    add_index(app)
    [chat, _] = app.test_client().get("/", headers=JSON).get_json()["agents"]
    assert chat["card"] == "https://a2a.example.com/api/v1/agents/chat" + CARD



def test_it_links_to_the_operator_s_page_when_that_is_on(make_app):
    app = make_app(A2A_DASHBOARD=True)[0]
    add_index(app)
    client = app.test_client()
    url = "http://localhost/api/v1/dashboard/"
    assert client.get("/", headers=JSON).get_json()["dashboard"] == url
    html = client.get("/", headers=BROWSER).get_data(as_text=True)
    assert '<a href="%s">the operator\'s page</a>' % url in html
    off = make_app()[0]
    add_index(off)
    assert "operator" not in off.test_client().get("/", headers=BROWSER).get_data(as_text=True)
