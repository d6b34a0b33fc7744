"""Tasks outlive the server: stop gunicorn, start it on the same SQLite file."""

import signal

import pytest

from helpers import message
from serving import assert_clean_log


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGKILL],
                         ids=["graceful", "killed"])
def test_tasks_survive_a_restart(start_server, stop_signal):
    server = start_server("wsgi:app", workers=2)
    echo, chat = server.rpc("echo"), server.rpc("chat")

    echoed = echo.send("remember me")
    chat_first = chat.send("my name is Ada")
    waiting = chat.send("I like tea", taskId=chat_first["id"])
    assert waiting["status"]["state"] == "input-required"
    done = chat.send("hello again")
    done = chat.send("bye", taskId=done["id"])
    assert done["status"]["state"] == "completed"
    canceled = chat.send("to be canceled")
    assert chat.result("tasks/cancel", {"id": canceled["id"]})["status"]["state"] \
        == "canceled"
    retried = message("sent twice", message_id="retry-after-restart")
    first_answer = echo.result("message/send", {"message": retried})

    tasks = {t["id"]: (agent, t) for agent, t in [
        ("echo", echoed), ("chat", waiting), ("chat", done), ("chat", canceled),
        ("echo", first_answer)]}
    before = {task_id: (echo if agent == "echo" else chat).result(
        "tasks/get", {"id": task_id}) for task_id, (agent, _) in tasks.items()}

    server.restart(stop_signal)
    echo, chat = server.rpc("echo"), server.rpc("chat")

    for task_id, (agent, _) in tasks.items():
        rpc = echo if agent == "echo" else chat
        assert rpc.result("tasks/get", {"id": task_id}) == before[task_id]
        assert rpc.result("tasks/get", {"id": task_id, "historyLength": 1}) \
            ["history"] == before[task_id]["history"][-1:]
    assert before[echoed["id"]]["artifacts"][0]["parts"][0]["text"] == "remember me"
    assert before[waiting["id"]]["status"]["state"] == "input-required"
    assert len(before[done["id"]]["history"]) == 4

    # The waiting conversation goes on where it stopped, memory included.
    going_on = chat.send("and coffee", taskId=waiting["id"])
    assert going_on["id"] == waiting["id"]
    assert going_on["status"]["state"] == "input-required"
    reply = going_on["status"]["message"]["parts"][0]["text"]
    assert reply == ("turn 3; you said: and coffee; you said earlier: "
                     "my name is Ada | I like tea")
    assert len(going_on["history"]) == 6

    # A retry of a message sent before the restart runs nothing again.
    replay = echo.result("message/send", {"message": retried})
    assert replay == before[first_answer["id"]]
    # Terminal tasks stayed terminal.
    status, error = chat.error("tasks/cancel", {"id": done["id"]})
    assert (status, error["code"], error["data"]["state"]) == (200, -32002, "completed")
    status, error = chat.error("tasks/get", {"id": "task_" + "0" * 32})
    assert (status, error["code"]) == (200, -32001)

    server.stop()
    assert_clean_log(server.log())
