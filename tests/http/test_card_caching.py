"""Agent Card caching (1.0 section 8.6): ETag, Cache-Control, Vary and 304
on If-None-Match; the tag is the same for the same card in another process."""

import pytest


CARD = "/api/v1/agents/echo/.well-known/agent-card.json"
V10 = {"A2A-Version": "1.0"}


def test_public_card_headers(make_app):
    app, _ = make_app(A2A_AUTH="required")
    response = app.test_client().get(CARD)
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "public, max-age=300"
    assert response.headers["ETag"].startswith('W/"')
    assert response.headers["Vary"] == "A2A-Version"


def test_max_age_is_a_setting(make_app):
    app, _ = make_app(A2A_CARD_MAX_AGE=60)
    assert app.test_client().get(CARD).headers["Cache-Control"] == \
        "public, max-age=60"


def test_a_bad_max_age_refuses_to_start(make_app):
    with pytest.raises(ValueError, match="A2A_CARD_MAX_AGE"):
        make_app(A2A_CARD_MAX_AGE=-1)


@pytest.mark.parametrize("path", [CARD, "/.well-known/agent.json"])
@pytest.mark.parametrize("headers", [{}, V10])
def test_if_none_match_answers_304(make_app, path, headers):
    app, _ = make_app()
    client = app.test_client()
    tag = client.get(path, headers=headers).headers["ETag"]
    again = client.get(path, headers=dict(headers, **{"If-None-Match": tag}))
    assert again.status_code == 304 and again.data == b""
    assert again.headers["ETag"] == tag
    other = client.get(path, headers=dict(headers, **{"If-None-Match": 'W/"x"'}))
    assert other.status_code == 200 and other.get_json()["name"]


def test_each_form_and_each_card_has_its_own_tag(make_app):
    app, _ = make_app()
    client = app.test_client()
    tags = {client.get(CARD).headers["ETag"],
            client.get(CARD, headers=V10).headers["ETag"],
            client.get("/api/v1/agents/chat/.well-known/agent-card.json")
            .headers["ETag"]}
    assert len(tags) == 3
    # A 0.3 tag does not stand for the 1.0 card.
    stale = client.get(CARD).headers["ETag"]
    assert client.get(CARD, headers=dict(V10, **{"If-None-Match": stale})
                      ).status_code == 200


def test_same_card_same_tag_after_a_restart(make_app, tmp_path):
    first, _ = make_app(A2A_PUBLIC_BASE_URL="https://a.example")
    tag = first.test_client().get(CARD).headers["ETag"]
    again, _ = make_app(A2A_PUBLIC_BASE_URL="https://a.example")
    assert again.test_client().get(CARD).headers["ETag"] == tag
    moved, _ = make_app(A2A_PUBLIC_BASE_URL="https://b.example")
    assert moved.test_client().get(CARD).headers["ETag"] != tag


def test_a_card_shown_to_callers_only_is_private(make_app):
    app, _ = make_app(A2A_AUTH="required", A2A_PUBLIC_CARDS=False)
    key = app.extensions["a2a"].credentials.create_key(None, "a")[1]
    response = app.test_client().get(CARD, headers={"X-API-Key": key})
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "private, no-cache"


def test_rest_extended_card_is_private_and_revalidated(make_app):
    app, _ = make_app(A2A_AUTH="required")
    key = app.extensions["a2a"].credentials.create_key(None, "a")[1]
    client = app.test_client()
    path = "/api/v1/agents/chat/rest/extendedAgentCard"
    headers = {"A2A-Version": "1.0", "X-API-Key": key}
    response = client.get(path, headers=headers)
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "private, no-cache"
    assert response.mimetype == "application/a2a+json"
    tag = response.headers["ETag"]
    again = client.get(path, headers=dict(headers, **{"If-None-Match": tag}))
    assert again.status_code == 304
    # Authentication first: a tag tells an anonymous caller nothing.
    anonymous = client.get(path, headers={"A2A-Version": "1.0",
                                          "If-None-Match": tag})
    assert anonymous.status_code == 401


def test_other_rest_answers_have_no_card_headers(keyed):
    caller, = keyed()
    status, _ = caller.rest("GET", "/tasks")
    response = caller.app.test_client().get(
        "/api/v1/agents/echo/rest/tasks",
        headers={"A2A-Version": "1.0", "X-API-Key": caller.key})
    assert status == 200 and "ETag" not in response.headers
