"""a2a_flask.client against our own service under gunicorn (2 workers, API
keys on, a background worker): every URL form, the three interfaces, the
background wait, the credentials, and retries that run the agent once.

The service is ``client_app`` (tests/client_app.py): the demo agents plus
``counted``, which writes a line per run to a ledger, and an OAuth 2
token endpoint whose tokens the service takes.
"""

import json
import os
import re
import signal
import subprocess
import threading

import pytest

from a2a_flask.errors import (
    A2AError, TaskNotCancelableError, TaskNotFoundError, UnauthenticatedError,
    UnsupportedOperationError,
)
from a2a_flask.client import (
    AmbiguousOutcome, CardError, Client, ClientCredentials, TokenError,
    TransportError, WaitTimeout,
)
from a2a_flask.client import client as client_module
from a2a_flask.client import stdlib_transport
from a2a_flask.client.cards import MESSAGE_ID_ONCE
from dropping_proxy import DroppingProxy
from serving import REPO_DIR, VENV_BIN, GunicornServer, WorkerProcess

INTERFACES = [("1.0", "JSONRPC"), ("1.0", "HTTP+JSON"), ("0.3", "JSONRPC")]


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """client_app under gunicorn (2 workers, an API key) and a worker process
    for ``slow``. A blocking send to a background agent answers at once
    (``A2A_BLOCKING_WAIT_SECONDS=0``: the client's own wait is what is
    tested); a killed worker's lease expires after 2 s."""
    folder = tmp_path_factory.mktemp("client-service")
    env = {"COUNT_LEDGER": str(folder / "ledger"),
           "RELAY_LEDGER": str(folder / "relays"), "A2A_WORKER_LEASE_SECONDS": "2",
           "OAUTH_GENERATION": str(folder / "generation"),
           "A2A_BLOCKING_WAIT_SECONDS": "0"}
    server = GunicornServer(folder, app="client_app:app", workers=2, auth="key",
                            env=env)
    server.start()
    worker = WorkerProcess(server, "--threads", "2", "--agents", "slow").start()
    server.key = server.headers["Authorization"].split(" ", 1)[1]
    server.ledger = env["COUNT_LEDGER"]
    server.relays = env["RELAY_LEDGER"]
    server.generation = env["OAUTH_GENERATION"]
    yield server
    worker.stop(signal.SIGKILL)
    server.stop()


@pytest.fixture(params=["urllib3", "stdlib"])
def transport(request, monkeypatch):
    """Each test using it runs on both transports: urllib3's (the ``client``
    extra) and the standard library's, which a plain install uses."""
    if request.param == "stdlib":
        monkeypatch.setattr(client_module, "Http", stdlib_transport.Http)
    return request.param


def agent_url(service, name="echo"):
    return "%s/api/v1/agents/%s" % (service.url, name)


def runs(ledger, task_id):
    if not os.path.exists(ledger):
        return 0
    with open(ledger) as f:
        return sum(1 for line in f if line.strip() == task_id)


@pytest.mark.parametrize("form", [
    "{base}", "{base}/", "{base}/a2a", "{base}/rest",
    "{base}/.well-known/agent-card.json", "{base}/.well-known/agent.json"])
def test_every_url_form_finds_the_agent(service, transport, form):
    with Client(form.format(base=agent_url(service)), key=service.key) as agent:
        assert agent.card["name"] == "echo"
        assert (agent.interface.version, agent.interface.binding) == ("1.0", "JSONRPC")
        assert agent.interface.url == agent_url(service) + "/a2a"
        task = agent.send("hello")
        assert (task.state, task.text) == ("completed", "hello")


def test_an_unknown_agents_endpoint_is_not_the_default_agent(service):
    # /.well-known/agent-card.json at the root is chat's (the default agent):
    # it does not list .../agents/nope/a2a, so it is not taken for it.
    with pytest.raises(CardError) as raised:
        Client(agent_url(service, "nope") + "/a2a", key=service.key).card
    nope, root = agent_url(service, "nope"), service.url
    assert str(raised.value).split("; ") == (
        "No Agent Card for {nope}/a2a; tried "
        "{nope}/a2a/.well-known/agent-card.json (HTTP 404: No agent named 'nope' can "
        "be talked to here.); "
        "{nope}/a2a/.well-known/agent.json (HTTP 404: Not Found: The requested URL "
        "was not found on the server. If you entered the URL manually please check "
        "your spelling and try again.); "
        "{nope}/.well-known/agent-card.json (HTTP 404: No agent named 'nope' can be "
        "talked to here.); "
        "{nope}/.well-known/agent.json (HTTP 404: No agent named 'nope' can be "
        "talked to here.); "
        "{root}/.well-known/agent-card.json (HTTP 200: the card of chat, which does "
        "not list {nope}/a2a); "
        "{root}/.well-known/agent.json (HTTP 200: the card of chat, which does not "
        "list {nope}/a2a).".format(nope=nope, root=root)).split("; ")


def test_the_host_root_is_the_default_agent(service):
    agent = Client(service.url, key=service.key)
    assert agent.card["name"] == "chat"
    assert agent.send("hi").state == "input-required"


@pytest.mark.compat
@pytest.mark.parametrize("version,binding", INTERFACES)
def test_operations_on_each_interface(service, transport, version, binding):
    agent = Client(agent_url(service, "chat"), key=service.key, version=version,
                   binding=binding)
    assert (agent.interface.version, agent.interface.binding) == (version, binding)
    first = agent.send("hello")
    assert first.state == "input-required"
    assert first.status_message.role == "agent"
    assert "hello" in first.text
    second = agent.send("bye", task_id=first.id, context_id=first.context_id)
    assert (second.id, second.state) == (first.id, "completed")
    got = agent.get(first.id, history_length=1)
    assert got.state == "completed" and len(got.history) == 1
    assert [m.role for m in agent.get(first.id).history] == ["user", "agent"] * 2
    waiting = agent.send("hello")
    assert agent.cancel(waiting.id).state == "canceled"
    with pytest.raises(TaskNotCancelableError) as raised:
        agent.cancel(first.id)
    assert raised.value.code == -32002
    with pytest.raises(TaskNotFoundError) as raised:
        agent.get("task_unknown")
    assert raised.value.code == -32001
    if binding == "HTTP+JSON":
        assert (raised.value.http_status, raised.value.reason) == (404, "TASK_NOT_FOUND")
    else:
        assert raised.value.http_status == 200
    if version == "0.3":
        with pytest.raises(UnsupportedOperationError):
            agent.list_tasks()
    else:
        page = agent.list_tasks(context_id=first.context_id)
        assert [t.id for t in page.tasks] == [first.id]
        assert page.next_page_token == ""


def test_list_pages(service):
    agent = Client(agent_url(service), key=service.key, binding="HTTP+JSON")
    context = "ctx-pages"
    sent = {agent.send("p%d" % i, context_id=context).id for i in range(3)}
    seen, token = [], None
    while True:
        page = agent.list_tasks(context_id=context, page_size=2, page_token=token)
        seen += [t.id for t in page.tasks]
        if not page.next_page_token:
            break
        token = page.next_page_token
    assert sorted(seen) == sorted(sent) and page.total_size == 3


@pytest.mark.parametrize("version,binding", INTERFACES)
def test_waits_for_a_background_agent(service, version, binding):
    agent = Client(agent_url(service, "slow"), key=service.key, version=version,
                   binding=binding)
    queued = agent.send("1", blocking=False)
    assert queued.state in ("submitted", "working")
    done = agent.wait(queued, timeout=60)
    assert (done.id, done.state, done.text) == (queued.id, "completed", "done after 1 s")
    again = agent.send("1", wait=60)
    assert (again.state, again.text) == ("completed", "done after 1 s")


@pytest.mark.parametrize("version, binding", INTERFACES)
def test_a_missing_task_is_the_servers_own_task_not_found_error(service, version,
                                                                binding):
    # One class on both sides: what a client of our own server raises is
    # a2a_flask.errors.TaskNotFoundError, the class the server raised.
    agent = Client(agent_url(service), key=service.key, version=version,
                   binding=binding)
    for call in (lambda: agent.get("task_" + "0" * 32),
                 lambda: agent.cancel("task_" + "0" * 32)):
        with pytest.raises(A2AError) as raised:
            call()
        assert type(raised.value) is TaskNotFoundError
        assert (raised.value.code, raised.value.reason, raised.value.http_status) == (
            -32001, None if version == "0.3" else "TASK_NOT_FOUND",
            404 if binding == "HTTP+JSON" else 200)
    # An agent calling ours with turn.call catches it with the same class.
    relay = Client(agent_url(service, "catcher"), key=service.key)
    task = relay.send("continue", metadata={
        "remote": agent_url(service, "echo"), "key": service.key,
        "version": version, "binding": binding})
    assert (task.state, task.text) == ("completed", "caught TaskNotFoundError -32001")


def test_wait_timeout_carries_the_last_task(service):
    agent = Client(agent_url(service, "slow"), key=service.key)
    with pytest.raises(WaitTimeout) as raised:
        agent.send("30", wait=0.3)
    assert raised.value.task.state == "working"
    assert agent.cancel(raised.value.task.id).state == "canceled"


def test_wrong_credentials(service):
    for binding in ("JSONRPC", "HTTP+JSON"):
        agent = Client(agent_url(service), key="a2a_wrong", binding=binding)
        with pytest.raises(UnauthenticatedError) as raised:
            agent.send("hello")
        assert (raised.value.code, raised.value.http_status) == (-32600, 401)


def test_key_in_the_header_the_card_names(service):
    proxy = DroppingProxy(service.port)
    try:
        agent = Client("%s/api/v1/agents/echo" % proxy.url, key=service.key)
        assert agent.send("hello").state == "completed"
        sent = proxy.requests[-1][2]
        assert sent["X-API-Key"] == service.key and "Authorization" not in sent
    finally:
        proxy.close()


@pytest.mark.compat
def test_basic_credentials(service):
    env = dict(os.environ, A2A_DATABASE=service.database, FLASK_APP="wsgi")
    env.pop("A2A_AUTH", None)
    subprocess.run([os.path.join(VENV_BIN, "flask"), "a2a", "users",
                    "create", "robot", "--password-stdin"], input="correct horse\n",
                   text=True, env=env, cwd=REPO_DIR, check=True, capture_output=True)
    agent = Client(agent_url(service), basic=("robot", "correct horse"))
    assert agent.send("hello").state == "completed"
    with pytest.raises(UnauthenticatedError):
        Client(agent_url(service), basic=("robot", "wrong")).send("hello")


def test_client_credentials_fetched_and_refreshed(service):
    auth = ClientCredentials("client", "client-secret",
                             token_url=service.url + "/oauth/token")
    agent = Client(agent_url(service), auth=auth)
    assert agent.send("one").state == "completed"
    assert agent.send("two").state == "completed"
    assert auth.fetched == 1
    with open(service.generation, "w") as f:  # every token issued is revoked
        f.write("2")
    assert agent.send("three").state == "completed"
    assert auth.fetched == 2
    # a token is not used past expires_in less the margin: here, at once
    eager = ClientCredentials("client", "client-secret", margin=3600,
                              token_url=service.url + "/oauth/token")
    agent = Client(agent_url(service), auth=eager)
    agent.send("one"), agent.send("two")
    assert eager.fetched == 2
    bad = ClientCredentials("client", "wrong", token_url=service.url + "/oauth/token")
    with pytest.raises(TokenError) as raised:
        Client(agent_url(service), auth=bad).send("hello")
    assert "invalid_client" in str(raised.value)


def test_token_url_from_the_cards_openid_connect_scheme(service):
    card = dict(Client(agent_url(service), key=service.key).card)
    card["securitySchemes"] = {"oidc": {
        "type": "openIdConnect",
        "openIdConnectUrl": service.url + "/oauth/.well-known/openid-configuration"}}
    auth = ClientCredentials("client", "client-secret")
    assert Client(card=card, auth=auth).send("hello").state == "completed"
    assert auth.token_url == service.url + "/oauth/token"


@pytest.mark.parametrize("version,binding", INTERFACES)
def test_a_dropped_answer_is_retried_and_runs_the_agent_once(service, transport, version, binding):
    proxy = DroppingProxy(service.port)
    try:
        agent = Client("%s/api/v1/agents/counted" % proxy.url, key=service.key,
                       version=version, binding=binding, tracing=True)
        assert any(e["uri"] == MESSAGE_ID_ONCE
                   for e in agent.card["capabilities"]["extensions"])
        proxy.drop(1)
        task = agent.send("once")
        assert (task.state, task.text) == ("completed", "counted once")
        sends = [r for r in proxy.requests if r[0] == "POST"]
        assert len(sends) == 2  # the lost one and its retry
        assert runs(service.ledger, task.id) == 1
        # one trace for the call, its retry included
        assert sends[0][2]["traceparent"] == sends[1][2]["traceparent"]
    finally:
        proxy.close()


def test_without_the_extension_a_lost_send_is_the_callers_decision(service, transport):
    proxy = DroppingProxy(service.port)
    try:
        card = dict(Client("%s/api/v1/agents/counted" % proxy.url,
                           key=service.key).card)
        card["capabilities"] = dict(card["capabilities"], extensions=[])
        agent = Client(card=card, key=service.key)
        proxy.drop(1)
        with pytest.raises(AmbiguousOutcome) as raised:
            agent.send("maybe")
        assert len([r for r in proxy.requests if r[0] == "POST"]) == 1
        # the caller decides to send it again, with the same messageId
        task = agent.send("maybe", message_id=raised.value.message_id)
        assert runs(service.ledger, task.id) == 1
    finally:
        proxy.close()


def test_reads_are_retried_anywhere(service, transport):
    proxy = DroppingProxy(service.port)
    try:
        card = dict(Client("%s/api/v1/agents/echo" % proxy.url, key=service.key).card)
        card["capabilities"] = dict(card["capabilities"], extensions=[])
        agent = Client(card=card, key=service.key)
        task = agent.send("read me")
        proxy.drop(1, match="/a2a")
        assert agent.get(task.id).state == "completed"
    finally:
        proxy.close()


def test_unreachable(service, transport):
    agent = Client("http://127.0.0.1:1/agents/x", retries=1, backoff=0.01)
    with pytest.raises(TransportError) as raised:
        agent.send("hello")
    assert not isinstance(raised.value, AmbiguousOutcome)


def test_one_client_many_threads(service, transport):
    agent = Client(agent_url(service), key=service.key)
    results, errors = [], []

    def call(i):
        try:
            results.append(agent.send("t%d" % i).text)
        except A2AError as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and sorted(results) == sorted("t%d" % i for i in range(8))


def relay_runs(service, task_id):
    if not os.path.exists(service.relays):
        return []
    with open(service.relays) as f:
        return [int(line.split()[1]) for line in f if line.split()[0] == task_id]


def test_turn_call_notes_the_remote_task(service):
    agent = Client(agent_url(service, "relay_now"), key=service.key)
    remote = {"remote": agent_url(service, "counted"), "key": service.key}
    task = agent.send("hi", metadata=remote)
    assert (task.state, task.text) == ("completed", "relayed: counted hi")
    noted = agent.get(task.id).metadata["a2a_flask.calls"]
    [(name, call)] = noted.items()
    # Named by the turn's message (its seq) and the call's index: a retried
    # turn finds the same name, and a later turn of the task another.
    assert re.fullmatch(r"[1-9][0-9]*\.0", name), name
    assert call["url"] == agent_url(service, "counted") + "/a2a"
    remote_task = Client(agent_url(service, "counted"), key=service.key).get(call["taskId"])
    assert (remote_task.state, remote_task.text) == ("completed", "counted hi")
    assert runs(service.ledger, call["taskId"]) == 1


def test_a_retried_turn_continues_the_remote_task(service):
    # Two workers for relay: the first run dies after its call (os._exit);
    # its lease expires (2 s) and the other worker runs the turn again.
    # The remote is reached through a proxy that counts the sends.
    workers = [WorkerProcess(service, "--agents", "relay").start() for _ in range(2)]
    proxy = DroppingProxy(service.port)
    try:
        agent = Client(agent_url(service, "relay"), key=service.key)
        remote = {"remote": "%s/api/v1/agents/counted" % proxy.url, "key": service.key}
        task = agent.send("die once", metadata=remote, blocking=False)
        done = agent.wait(task, timeout=60)
        assert (done.state, done.text) == ("completed", "relayed: counted die once")
        assert relay_runs(service, task.id) == [1, 2]
        [call] = done.metadata["a2a_flask.calls"].values()
        assert runs(service.ledger, call["taskId"]) == 1  # the remote ran once
        # sent once: the retried turn read the noted task instead
        assert sum(b'"SendMessage"' in r[3] for r in proxy.requests) == 1
    finally:
        proxy.close()
        for worker in workers:
            worker.stop(signal.SIGKILL)


@pytest.mark.compat
def test_flask_a2a_call(service, make_app):
    runner = make_app()[0].test_cli_runner()
    url = agent_url(service, "chat")
    out = runner.invoke(args=["a2a", "call", url, "hello", "--key-stdin"],
                        input=service.key + "\n")
    assert out.exit_code == 0, out.output
    first, reply = out.output.splitlines()
    state, _, task_id, _, context_id = first.split()
    assert (state, reply) == ("input-required", "turn 1; you said: hello")
    out = runner.invoke(args=["a2a", "call", url, "bye", "--key", service.key,
                              "--task-id", task_id, "--json",
                              "--binding", "HTTP+JSON"])
    assert out.exit_code == 0, out.output
    task = json.loads(out.output)
    assert (task["id"], task["status"]["state"]) == (task_id, "TASK_STATE_COMPLETED")
    out = runner.invoke(args=["a2a", "call", agent_url(service, "slow"), "1",
                              "--key", service.key, "--wait", "--version", "0.3"])
    assert out.output.splitlines()[-1] == "done after 1 s", out.output
    out = runner.invoke(args=["a2a", "call", url, "hello", "--key", "a2a_wrong"])
    assert out.exit_code == 1
    assert "UnauthenticatedError: -32600" in out.output and "(HTTP 401)" in out.output


def test_cards_that_need_credentials(tmp_path):
    server = GunicornServer(tmp_path, app="wsgi:app", auth="key",
                            env={"A2A_PUBLIC_CARDS": "0"}).start()
    try:
        key = server.headers["Authorization"].split(" ", 1)[1]
        url = server.url + "/api/v1/agents/echo"
        assert Client(url, key=key).send("hello").text == "hello"
        with pytest.raises(CardError, match="HTTP 401"):
            Client(url).card
    finally:
        server.stop()


# -- python -m a2a_flask.client: the terminal client, no app -----------------

#: A sitecustomize that makes ``import urllib3`` fail, as it does after a
#: plain ``pip install .`` (urllib3 comes with the ``client`` extra only).
NO_URLLIB3 = '''
import sys


class _NoUrllib3:
    def find_spec(self, name, path=None, target=None):
        if name == "urllib3" or name.startswith("urllib3."):
            raise ModuleNotFoundError("No module named %r" % name, name=name)
        return None


sys.meta_path.insert(0, _NoUrllib3())
'''


@pytest.fixture(params=["with urllib3", "without urllib3"])
def terminal(request, tmp_path):
    """Runs ``python -m a2a_flask.client ARGS`` from an empty folder, as a
    newcomer would: ``terminal(*args, input=None)`` -> CompletedProcess."""
    folder = tmp_path / "anywhere"
    folder.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("A2A_", "FLASK_"))}
    env["PYTHONPATH"] = REPO_DIR
    if request.param == "without urllib3":
        blocker = tmp_path / "no-urllib3"
        blocker.mkdir()
        (blocker / "sitecustomize.py").write_text(NO_URLLIB3)
        env["PYTHONPATH"] = "%s%s%s" % (blocker, os.pathsep, REPO_DIR)
        probe = subprocess.run(
            [os.path.join(VENV_BIN, "python"), "-c",
             "import a2a_flask.client.transport as t; print(t.Http.__module__); "
             "import urllib3"], env=env, cwd=str(folder), capture_output=True,
            text=True)
        assert probe.stdout == "a2a_flask.client.stdlib_transport\n", probe
        assert "No module named 'urllib3'" in probe.stderr, probe

    def run(*args, input=None):
        return subprocess.run(
            [os.path.join(VENV_BIN, "python"), "-m", "a2a_flask.client"] + list(args),
            env=env, cwd=str(folder), input=input, capture_output=True, text=True,
            timeout=60)

    return run


def test_python_m_client_prints_the_state_and_reply(service, terminal):
    url = agent_url(service, "chat")
    out = terminal(url, "hello", "--key-stdin", input=service.key + "\n")
    assert (out.returncode, out.stderr) == (0, ""), out
    first, reply = out.stdout.splitlines()
    state, task_word, task_id, context_word, context_id = first.split()
    assert (state, task_word, context_word) == ("input-required", "task", "context")
    assert reply == "turn 1; you said: hello"
    assert first == "input-required  task %s  context %s" % (task_id, context_id)
    out = terminal(url, "bye", "--key", service.key, "--task-id", task_id, "--json",
                   "--binding", "HTTP+JSON")
    assert out.returncode == 0, out
    task = json.loads(out.stdout)
    assert (task["id"], task["status"]["state"]) == (task_id, "TASK_STATE_COMPLETED")
    out = terminal(agent_url(service, "slow"), "1", "--key", service.key, "--wait",
                   "--version", "0.3")
    assert out.returncode == 0, out
    assert out.stdout.splitlines()[-1] == "done after 1 s", out
    assert out.stdout.split()[0] == "completed"


def test_python_m_client_prints_what_flask_a2a_call_prints(service, terminal,
                                                           make_app):
    runner = make_app()[0].test_cli_runner()
    url = agent_url(service)
    by_flask = runner.invoke(args=["a2a", "call", url, "same", "--key", service.key])
    by_python = terminal(url, "same", "--key", service.key)

    def shown(text):
        return re.sub(r"(task|ctx)_[A-Za-z0-9_-]+", r"\1_<id>", text)

    assert by_flask.exit_code == by_python.returncode == 0
    assert shown(by_python.stdout) == shown(by_flask.output) == (
        "completed  task task_<id>  context ctx_<id>\nsame\n")


def test_python_m_client_errors_go_to_stderr_with_status_1(service, terminal):
    out = terminal(agent_url(service), "hello", "--key", "a2a_wrong")
    assert (out.returncode, out.stdout) == (1, "")
    assert out.stderr.startswith("Error: UnauthenticatedError: -32600 "), out
    assert "(HTTP 401)" in out.stderr
    out = terminal(agent_url(service, "nope") + "/a2a", "hello", "--key", service.key)
    assert (out.returncode, out.stdout) == (1, "")
    assert out.stderr.startswith("Error: CardError: No Agent Card for "), out
    assert "(HTTP 200: the card of chat, which does not list " in out.stderr
    out = terminal("http://127.0.0.1:1/agents/x", "hello")
    assert (out.returncode, out.stdout) == (1, "")
    assert out.stderr.startswith("Error: TransportError: could not connect to "), out
    out = terminal(agent_url(service), "hello", "--timeout", "-1")
    assert out.returncode == 2 and "not a number of seconds" in out.stderr, out
