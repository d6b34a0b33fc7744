"""Several gunicorn workers on one SQLite file, many clients at once."""

import threading
import time

import pytest

from helpers import message
from serving import assert_clean_log

WORKERS = 4
THREADS = 8
ECHO_PER_THREAD = 25             # 200 echo tasks
CHATS_PER_THREAD = 5             # 40 conversations ...
CHAT_TURNS = 5                   # ... of 5 turns (the last "bye"): 200 sends


def _check_task(task, state, history, task_id=None):
    assert task["kind"] == "task"
    assert task["status"]["state"] == state, task
    assert len(task["history"]) == history, task
    if task_id is not None:
        assert task["id"] == task_id
    for entry in task["history"]:
        assert entry["taskId"] == task["id"]
        assert entry["contextId"] == task["contextId"]


def _client_thread(server, number, echo_tasks, chat_tasks, failures):
    echo, chat = server.rpc("echo"), server.rpc("chat")
    try:
        conversations = [None] * CHATS_PER_THREAD  # (task id, context id, turns)
        # Interleave: 5 rounds of (5 echo sends, one turn of each conversation).
        for round_ in range(CHAT_TURNS):
            for i in range(ECHO_PER_THREAD // CHAT_TURNS):
                text = "echo t%d r%d i%d" % (number, round_, i)
                task = echo.send(text)
                _check_task(task, "completed", 2)
                assert task["artifacts"][0]["name"] == "response"
                assert task["artifacts"][0]["parts"] == [{"kind": "text", "text": text}]
                assert task["history"][0]["parts"][0]["text"] == text
                echo_tasks[task["id"]] = text
            for c in range(CHATS_PER_THREAD):
                turn = round_ + 1
                last = turn == CHAT_TURNS
                text = "bye" if last else "chat t%d c%d turn %d" % (number, c, turn)
                if conversations[c] is None:
                    task = chat.send(text)
                else:
                    task_id, context_id = conversations[c]
                    task = chat.send(text, taskId=task_id)
                    assert (task["id"], task["contextId"]) == (task_id, context_id)
                _check_task(task, "completed" if last else "input-required", 2 * turn)
                reply = task["status"]["message"]["parts"][0]["text"]
                if last:
                    assert reply == "Goodbye! We talked for %d turns." % turn, reply
                else:
                    # The agent saw every earlier turn, whichever worker stored it.
                    assert reply.startswith("turn %d; you said: %s" % (turn, text)), reply
                    for earlier in range(1, turn):
                        assert "chat t%d c%d turn %d" % (number, c, earlier) in reply
                conversations[c] = (task["id"], task["contextId"])
        for task_id, _ in conversations:
            chat_tasks[task_id] = number
    except BaseException as exc:  # reported by the main thread
        failures.append((number, exc))


def _get_all(server, ids, results, failures):
    rpc = server.rpc("echo")
    try:
        for task_id, agent in ids:
            results[task_id] = rpc.result("tasks/get", {"id": task_id}, agent=agent)
    except BaseException as exc:
        failures.append(("get", exc))


@pytest.mark.parametrize("gunicorn_args", [[], ["--preload", "--threads", "2"]],
                         ids=["sync", "preload-gthread"])
def test_many_clients_on_four_workers(start_server, gunicorn_args):
    server = start_server("wsgi:app", workers=WORKERS, gunicorn_args=gunicorn_args)
    echo_tasks, chat_tasks, failures = {}, {}, []
    started = time.monotonic()
    threads = [threading.Thread(target=_client_thread,
                                args=(server, n, echo_tasks, chat_tasks, failures))
               for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not failures, failures[:3]
    assert not any(thread.is_alive() for thread in threads)
    sends = time.monotonic() - started
    assert len(echo_tasks) == THREADS * ECHO_PER_THREAD
    assert len(chat_tasks) == THREADS * CHATS_PER_THREAD

    # tasks/get every task, from 8 threads again.
    ids = [(t, "echo") for t in echo_tasks] + [(t, "chat") for t in chat_tasks]
    results, threads = {}, []
    for n in range(THREADS):
        threads.append(threading.Thread(
            target=_get_all, args=(server, ids[n::THREADS], results, failures)))
        threads[-1].start()
    for thread in threads:
        thread.join(120)
    assert not failures, failures[:3]
    assert len(results) == len(ids)
    for task_id, text in echo_tasks.items():
        task = results[task_id]
        _check_task(task, "completed", 2, task_id)
        assert task["history"][0]["parts"][0]["text"] == text
        assert task["history"][1]["role"] == "agent"
    for task_id in chat_tasks:
        task = results[task_id]
        _check_task(task, "completed", 2 * CHAT_TURNS, task_id)
        assert [m["role"] for m in task["history"]] == ["user", "agent"] * CHAT_TURNS
        assert task["history"][-2]["parts"][0]["text"] == "bye"
        assert len(task["artifacts"]) == 1

    server.stop()
    log = server.log()
    statuses = server.access_statuses(log)
    # 400 sends and as many gets as tasks, every one HTTP 200.
    assert len(statuses) >= 400 + len(ids), len(statuses)
    assert set(statuses) == {200}, sorted(set(statuses))
    assert_clean_log(log)
    print("400 sends in %.1fs on %d workers" % (sends, WORKERS))


def _parallel(server, agent, func, n=THREADS):
    """``func(rpc, i)`` from n threads (own connections) released at once."""
    barrier = threading.Barrier(n)
    results, failures = [None] * n, []

    def run(i, rpc):
        try:
            barrier.wait(10)
            results[i] = func(rpc, i)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(i, server.rpc(agent)))
               for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not failures, failures[:3]
    return results


def test_races_on_one_task_across_workers(start_server):
    server = start_server("wsgi:app", workers=WORKERS)
    echo, chat = server.rpc("echo"), server.rpc("chat")

    # One messageId from 8 connections at once: one task, run once.
    sent = message("only once", message_id="the-same-message")
    answers = _parallel(server, "echo", lambda rpc, i: rpc.result(
        "message/send", {"message": sent}))
    assert len({a["id"] for a in answers}) == 1
    assert {a["status"]["state"] for a in answers} <= {"working", "completed"}
    task = echo.result("tasks/get", {"id": answers[0]["id"]})
    _check_task(task, "completed", 2)
    assert len(task["artifacts"]) == 1

    # 8 continuations of one waiting task at once: each one either goes in
    # (then waits again) or is refused while another runs; none is lost.
    waiting = chat.send("start")

    def go_on(rpc, i):
        sent = message("more %d" % i, message_id="more-%d" % i, taskId=waiting["id"])
        status, answer = rpc.call("message/send", {"message": sent})
        assert status == 200
        return answer

    answers = _parallel(server, "chat", go_on)
    taken = []
    for i, answer in enumerate(answers):
        if "error" in answer:
            error = answer["error"]
            assert (error["code"], error["data"]["state"]) == (-32602, "working")
            continue
        task = answer["result"]
        taken.append("more %d" % i)
        assert task["id"] == waiting["id"]
        assert "more-%d" % i in [m["messageId"] for m in task["history"]]
        # The task as it stands when answered (another turn may have begun),
        # read in one snapshot: the status message is the last message.
        if task["status"]["state"] == "working":
            assert task["history"][-1]["role"] == "user"
        else:
            assert task["status"]["state"] == "input-required"
            assert task["status"]["message"] == task["history"][-1]
    assert taken
    task = chat.result("tasks/get", {"id": waiting["id"]})
    _check_task(task, "input-required", 2 + 2 * len(taken))
    assert sorted(m["parts"][0]["text"] for m in task["history"][2::2]) \
        == sorted(taken)
    turns = sorted(int(m["parts"][0]["text"].split(";")[0].split()[1])
                   for m in task["history"][1::2])
    assert turns == list(range(1, len(taken) + 2))  # each turn saw the others

    # 8 cancels of one waiting task at once: one cancels, the rest see it done.
    answers = _parallel(server, "chat", lambda rpc, i: rpc.call(
        "tasks/cancel", {"id": waiting["id"]})[1])
    canceled = [a for a in answers if "result" in a]
    assert len(canceled) == 1
    assert canceled[0]["result"]["status"]["state"] == "canceled"
    assert sorted((a["error"]["code"], a["error"]["data"]["state"])
                  for a in answers if "error" in a) == [(-32002, "canceled")] * 7
    assert chat.result("tasks/get", {"id": waiting["id"]})["history"] \
        == task["history"]

    server.stop()
    assert_clean_log(server.log())
