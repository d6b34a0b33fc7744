"""The agent API (Turn, Reply, InputRequired, AuthRequired, Reject), agent
registration, and the demo agents."""

import pytest

from a2a_flask import A2A, AuthRequired, InputRequired, Reject, Reply
from helpers import texts

# -- the demo agents ----------------------------------------------------------------


def test_echo_replies_with_its_text(rpc):
    task = rpc.send("first line", parts=[{"kind": "text", "text": "one"},
                                         {"kind": "text", "text": "two"}])
    assert task["status"]["state"] == "completed"
    assert texts(task["status"]["message"]) == "one\ntwo"


def test_chat_waits_for_input_each_turn_remembers_and_ends_on_bye(make_rpc):
    chat = make_rpc(agent="chat")
    task = chat.send("hello")
    assert task["status"]["state"] == "input-required"
    assert texts(task["status"]["message"]) == "turn 1; you said: hello"
    task = chat.send("how are you", taskId=task["id"])
    assert task["status"]["state"] == "input-required"
    assert texts(task["status"]["message"]) == \
        "turn 2; you said: how are you; you said earlier: hello"
    task = chat.send("fine", taskId=task["id"])
    assert texts(task["status"]["message"]) == \
        "turn 3; you said: fine; you said earlier: hello | how are you"
    task = chat.send("Bye!", taskId=task["id"])
    assert task["status"]["state"] == "completed"
    assert texts(task["status"]["message"]) == "Goodbye! We talked for 4 turns."
    assert texts(task["artifacts"][0]) == "Goodbye! We talked for 4 turns."
    assert len(task["history"]) == 8


def test_chat_remembers_across_tasks_of_a_context(make_rpc):
    chat = make_rpc(agent="chat")
    first = chat.send("hello")
    chat.send("bye", taskId=first["id"])
    second = chat.send("again", contextId=first["contextId"])
    assert second["id"] != first["id"]
    assert second["status"]["state"] == "input-required"
    assert texts(second["status"]["message"]) == \
        "turn 3; you said: again; you said earlier: hello | bye"
    # Another conversation knows none of it.
    other = chat.send("again")
    assert texts(other["status"]["message"]) == "turn 1; you said: again"


def test_chat_unknown_context_starts_fresh(make_rpc):
    chat = make_rpc(agent="chat")
    task = chat.send("hi", contextId="caller-conv-9")
    assert texts(task["status"]["message"]) == "turn 1; you said: hi"


# -- Turn ---------------------------------------------------------------------------------


def test_turn_attributes(script):
    first = script.send("ask")
    script.send("second", taskId=first["id"], metadata={"m": 1})
    turn = script.a2a.turns[-1]
    assert turn.task_id == first["id"]
    assert turn.context_id == first["contextId"]
    assert turn.text == "second"
    assert turn.message["metadata"] == {"m": 1}
    assert turn.caller.id == "anonymous"
    assert turn.agent.name == "script"
    assert [texts(m) for m in turn.history] == ["ask", "What else?"]
    assert [m["role"] for m in turn.context_history] == ["user", "agent"]
    assert turn.canceled is False


def test_reply_with_parts_and_more_artifacts(make_rpc):
    def register(a2a):
        a2a.add_agent("rich", lambda turn: Reply(
            parts=[{"kind": "text", "text": "see data"},
                   {"kind": "data", "data": {"answer": 42}}],
            artifacts=[{"name": "report", "description": "The report.",
                        "parts": [{"kind": "text", "text": "report body"}],
                        "metadata": {"pages": 1}}],
            metadata={"model": "m1"}))

    rpc = make_rpc(register, agent="rich")
    task = rpc.send("go")
    assert task["status"]["state"] == "completed"
    response, report = task["artifacts"]
    assert response["name"] == "response"
    assert response["parts"][1] == {"kind": "data", "data": {"answer": 42}}
    assert report["name"] == "report" and report["description"] == "The report."
    assert report["parts"] == [{"kind": "text", "text": "report body"}]
    assert report["metadata"] == {"pages": 1}
    assert response["artifactId"] != report["artifactId"]
    assert task["status"]["message"]["metadata"] == {"model": "m1"}


@pytest.mark.parametrize("result, state", [
    ("plain string", "completed"),
    (Reply("r"), "completed"),
    (InputRequired(parts=[{"kind": "text", "text": "q"}]), "input-required"),
    (AuthRequired("a"), "auth-required"),
    (Reject("no"), "rejected"),
])
def test_every_return_type_gives_its_state(make_rpc, result, state):
    rpc = make_rpc(lambda a2a: a2a.add_agent("fixed", lambda turn: result),
                   agent="fixed")
    task = rpc.send("x")
    assert task["status"]["state"] == state
    assert task["status"]["message"]["role"] == "agent"
    assert (task["artifacts"] != []) == (state == "completed")


@pytest.mark.parametrize("answer, named", [
    (lambda: Reply(parts=[{"kind": "text"}]), "parts: parts[0].text"),
    (lambda: Reply(parts=[]), "parts: parts: must not be empty"),
    (lambda: InputRequired(parts=[{"kind": "image", "url": "x"}]),
     "parts: parts[0].kind"),
    (lambda: Reply("ok", artifacts=[{"name": "no parts"}]), "artifact: parts"),
    (lambda: Reply(parts=[{"kind": "data", "data": {"when": object()}}]),
     "not JSON"),
])
def test_an_answer_that_is_not_valid_a2a_fails_the_task(make_rpc, caplog, answer,
                                                        named):
    # Whatever the agent gives is sent as it is: an invalid part must fail the
    # task (logged, naming the problem), never break the answer's schema or
    # leave the task working.
    rpc = make_rpc(lambda a2a: a2a.add_agent("sloppy", lambda turn: answer()),
                   agent="sloppy")
    task = rpc.send("x")
    assert task["status"]["state"] == "failed"
    assert task["artifacts"] == []
    assert rpc.result("tasks/get", {"id": task["id"]}) == task
    assert named in caplog.text


# -- registration -------------------------------------------------------------------------


def test_same_agent_name_twice_raises_at_registration(make_app):
    app, a2a = make_app()
    with pytest.raises(ValueError, match="echo"):
        a2a.add_agent("echo", lambda turn: "again")
    with pytest.raises(ValueError, match="chat"):
        a2a.agent("chat")(lambda turn: "again")


def test_decorator_registration_before_init_app(tmp_path):
    from flask import Flask

    a2a = A2A()

    @a2a.agent("late", description="Registered first.")
    def late(turn):
        return "late: " + turn.text

    app = Flask("x", instance_path=str(tmp_path))
    app.config.update(A2A_DATABASE=str(tmp_path / "db.sqlite3"), A2A_AUTH="off")
    a2a.init_app(app)
    from helpers import Rpc
    task = Rpc(app.test_client(), agent="late").send("hi")
    assert texts(task["status"]["message"]) == "late: hi"


@pytest.mark.parametrize("name", ["", "a/b"])
def test_bad_agent_name_raises(name):
    with pytest.raises(ValueError):
        A2A().add_agent(name, lambda turn: "x")


@pytest.mark.parametrize("skill", [
    {"name": "no id", "description": "d"},
    {"id": "", "name": "n", "description": "d"},
    {"id": "x", "description": "d"},
])
def test_invalid_skill_raises_at_registration(skill):
    with pytest.raises(ValueError, match="skill"):
        A2A().add_agent("bad", lambda turn: "x", skills=[skill])

