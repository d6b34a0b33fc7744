"""a2a_flask.testing: what a user needs to test their own agents."""

import pytest

from a2a_flask import InputRequired
from a2a_flask.errors import ForbiddenError, TaskNotFoundError, UnauthenticatedError
from a2a_flask.testing import A2AClient, make_key


def register_asker(a2a):
    def asker(turn):
        return "thanks" if turn.history else InputRequired("Which one?")

    a2a.add_agent("asker", asker)


@pytest.fixture
def app(make_app):
    return make_app(register_asker, A2A_AUTH="required",
                    A2A_URL_PREFIX="/svc")[0]


def test_send_get_cancel_with_a_made_key(app):
    client = A2AClient(app, key=make_key(app), agent="asker")
    task = client.send("hello")
    assert task["status"]["state"] == "input-required"
    continued = client.send("the blue one", task_id=task["id"],
                            context_id=task["contextId"])
    assert continued["status"]["state"] == "completed"
    assert continued["id"] == task["id"]
    got = client.get(task["id"], history_length=1)
    assert [m["role"] for m in got["history"]] == ["agent"]
    other = client.send("again")
    assert client.cancel(other["id"])["status"]["state"] == "canceled"
    echoed = client.send("hi", agent="echo")
    assert echoed["artifacts"][0]["parts"][0]["text"] == "hi"


def test_errors_raise_with_code_message_and_status(app):
    client = A2AClient(app.test_client(), key=make_key(app, agents=["echo"]),
                       agent="echo")
    with pytest.raises(TaskNotFoundError) as raised:
        client.get("task_00000000000000000000000000000000")
    assert (raised.value.code, raised.value.http_status) == (-32001, 200)
    with pytest.raises(ForbiddenError) as raised:
        client.send("hi", agent="asker")  # outside the key's scope
    assert (raised.value.code, raised.value.http_status) == (-32600, 403)
    with pytest.raises(UnauthenticatedError) as raised:
        A2AClient(app, agent="echo").send("hi")  # no key
    assert (raised.value.code, raised.value.http_status) == (-32600, 401)
    assert "Authentication required" in raised.value.message


def test_without_an_agent_it_calls_the_default_agent(make_app):
    app, _ = make_app(A2A_DEFAULT_AGENT="echo")
    task = A2AClient(app).send("at the root")
    assert task["artifacts"][0]["parts"][0]["text"] == "at the root"


def test_make_key_needs_the_extension():
    from flask import Flask

    with pytest.raises(RuntimeError, match="not set up on app"):
        make_key(Flask("bare"))
