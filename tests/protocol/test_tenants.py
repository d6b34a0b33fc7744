"""Tenants (A2A_TENANTS, docs/tenants.md), in process through HTTP, on
SQLite and PostgreSQL, over both 1.0 bindings: the card's interfaces, the
routes below a tenant, and the probes of one tenant into another (get,
cancel, list, continue, join a context, reuse a messageId), each answered
as if what it names did not exist."""

import pytest

from a2a_flask import InputRequired
from helpers import Rpc, detail, message

TENANTS = "acme,beta"


@pytest.fixture(params=["sqlite", "postgres"])
def database(request, tmp_path):
    """The A2A_DATABASE of each backend (PostgreSQL: a throwaway cluster)."""
    if request.param == "sqlite":
        return str(tmp_path / "a2a.sqlite3")
    return request.getfixturevalue("postgres_url")


def _context_agent(a2a):
    @a2a.agent("memo")
    def memo(turn):
        """Says how many earlier messages its conversation holds."""
        return InputRequired("%d earlier" % len(turn.context_history))


@pytest.fixture
def tenant_keyed(make_app, database):
    """An app with A2A_TENANTS and keys of acme, of beta and of no tenant."""
    app, _ = make_app(A2A_AUTH="required", A2A_TENANTS=TENANTS,
                      A2A_DATABASE=database)
    credentials = app.extensions["a2a"].credentials
    client = app.test_client()

    def caller(tenant):
        return Rpc(client, key=credentials.create_key(None, tenant, tenant=tenant)[1], version="1.0")

    return app, caller("acme"), caller("beta"), caller(None)


@pytest.fixture
def open_app(make_app, database):
    """Authentication off: one anonymous caller, in every tenant; only the
    storage keeps the tenants apart."""
    app, _ = make_app(A2A_TENANTS=TENANTS, A2A_DATABASE=database,
                      register=_context_agent)
    return Rpc(app.test_client(), version="1.0")


def rest(caller, method, path, tenant=None, body=None, agent=None):
    base = "/api/v1/agents/%s/rest" % (agent or caller.agent)
    if tenant:
        base += "/" + tenant
    return caller.rest(method, path, body, base=base)


def rest_send(caller, tenant, text="hello", agent=None, **fields):
    return rest(caller, "POST", "/message:send", tenant,
                {"message": message(text, version="1.0", **fields)}, agent)


def rpc(caller, method, params, tenant=None, agent=None):
    if tenant:
        params = dict(params, tenant=tenant)
    return caller.call(method, params, agent=agent)


def rpc_send(caller, tenant, text="hello", agent=None, **fields):
    status, body = rpc(caller, "SendMessage",
                       {"message": message(text, version="1.0", **fields)}, tenant, agent)
    assert status == 200 and "result" in body, body
    return body["result"]["task"]


def task_not_found(status, body, task_id, binding):
    """The answer of a task that does not exist, on either binding."""
    if binding == "rest":
        assert status == 404, body
        info = detail(body["error"], "ErrorInfo")
        assert info["reason"] == "TASK_NOT_FOUND"
        assert info["metadata"] == {"taskId": task_id}
    else:
        assert status == 200 and body["error"]["code"] == -32001, body
        assert detail(body["error"], "ErrorInfo")["metadata"] == {"taskId": task_id}


def agent_not_found(status, body, binding, agent="echo"):
    """The answer of an agent that does not exist, on either binding (the
    same as for a name no agent has)."""
    assert status == 404, body
    assert body["error"]["message"] == (
        "No agent named %r can be talked to here." % agent)


# -- names and the card ---------------------------------------------------------


@pytest.mark.parametrize("value, words", [
    ("acme,Bad", "tenant name 'Bad' is not [a-z0-9][a-z0-9-]{0,62}"),
    ("-x", "tenant name '-x' is not"),
    ("a" * 64, "is not [a-z0-9][a-z0-9-]{0,62}"),
    ("acme,tasks", "tenant name 'tasks' collides with a path of this service"),
    ("health", "tenant name 'health' collides"),
    ("v1", "tenant name 'v1' collides"),  # a segment of A2A_URL_PREFIX
])
def test_a_bad_or_colliding_name_is_refused_at_start(make_app, value, words):
    with pytest.raises(ValueError) as refused:
        make_app(A2A_TENANTS=value)
    assert str(refused.value).startswith("A2A_TENANTS: ")
    assert words in str(refused.value)


def test_a_bad_name_of_one_agent_is_refused_at_registration(make_app):
    def register(a2a):
        a2a.add_agent("solo", lambda turn: "hi", tenants=["agents"])

    with pytest.raises(ValueError) as refused:
        make_app(register=register)
    assert str(refused.value).startswith("agent 'solo': tenants: tenant name "
                                         "'agents' collides")


def test_the_card_lists_each_tenants_interfaces_after_the_usual_ones(make_app):
    def register(a2a):
        a2a.add_agent("solo", lambda turn: "hi", tenants=["gamma"])

    app, _ = make_app(A2A_TENANTS=TENANTS, A2A_PUBLIC_BASE_URL="https://a.example",
                      register=register)
    client = app.test_client()
    base = "https://a.example/api/v1/agents/%s/"

    def interfaces(agent):
        response = client.get("/api/v1/agents/%s/.well-known/agent-card.json" % agent)
        assert response.status_code == 200
        return response.get_json()["supportedInterfaces"]

    def of(agent, tenant=None):
        listed = [
            {"url": base % agent + "a2a", "protocolBinding": "JSONRPC",
             "protocolVersion": "1.0"},
            {"url": base % agent + "rest", "protocolBinding": "HTTP+JSON",
             "protocolVersion": "1.0"}]
        if tenant is None:
            return listed + [{"url": base % agent + "a2a", "protocolBinding": "JSONRPC",
                              "protocolVersion": "0.3"}]
        return [dict(item, tenant=tenant) for item in listed]

    assert interfaces("echo") == of("echo") + of("echo", "acme") + of("echo", "beta")
    assert interfaces("solo") == (of("solo") + of("solo", "acme") + of("solo", "beta")
                                  + of("solo", "gamma"))


def test_without_tenants_the_card_lists_none(make_app):
    app, _ = make_app()
    card = app.test_client().get(
        "/api/v1/agents/echo/.well-known/agent-card.json").get_json()
    assert [i.get("tenant") for i in card["supportedInterfaces"]] == [None] * 3


# -- a tenant's own calls --------------------------------------------------------


def test_a_tenant_key_works_in_its_tenant_over_both_bindings(tenant_keyed):
    _, acme, _, _ = tenant_keyed
    status, sent = rest_send(acme, "acme")
    assert status == 200 and sent["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    task_id = sent["task"]["id"]
    status, got = rest(acme, "GET", "/tasks/" + task_id, "acme")
    assert status == 200 and got["id"] == task_id
    status, body = rpc(acme, "GetTask", {"id": task_id}, "acme")
    assert status == 200 and body["result"]["id"] == task_id
    status, page = rest(acme, "GET", "/tasks", "acme")
    assert status == 200 and [t["id"] for t in page["tasks"]] == [task_id]
    status, body = rpc(acme, "ListTasks", {}, "acme")
    assert [t["id"] for t in body["result"]["tasks"]] == [task_id]
    assert body["result"]["totalSize"] == 1


def test_no_tenant_keeps_working_as_before_beside_tenants(tenant_keyed):
    _, acme, _, plain = tenant_keyed
    acme_task = rpc_send(acme, "acme")
    task = rpc_send(plain, None)
    status, page = rest(plain, "GET", "/tasks")
    assert status == 200 and [t["id"] for t in page["tasks"]] == [task["id"]]
    status, body = rpc(plain, "GetTask", {"id": acme_task["id"]})
    task_not_found(status, body, acme_task["id"], "rpc")


# -- probes of one tenant into another ---------------------------------------------


@pytest.mark.parametrize("binding", ["rest", "rpc"])
def test_get_and_cancel_of_another_tenants_task_find_no_task(tenant_keyed, binding):
    _, acme, beta, plain = tenant_keyed
    acme.agent = beta.agent = plain.agent = "chat"
    task_id = rpc_send(acme, "acme")["id"]  # input-required: cancelable
    probes = [(beta, "beta"), (beta, "acme"), (plain, None), (plain, "acme"),
              (acme, None), (acme, "beta")]
    for caller, tenant in probes:
        if binding == "rest":
            task_not_found(*rest(caller, "GET", "/tasks/" + task_id, tenant),
                           task_id, binding)
            task_not_found(*rest(caller, "POST", "/tasks/%s:cancel" % task_id,
                                 tenant, {}), task_id, binding)
        else:
            task_not_found(*rpc(caller, "GetTask", {"id": task_id}, tenant),
                           task_id, binding)
            task_not_found(*rpc(caller, "CancelTask", {"id": task_id}, tenant),
                           task_id, binding)
    status, got = rest(acme, "GET", "/tasks/" + task_id, "acme")
    assert status == 200 and got["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"


@pytest.mark.parametrize("binding", ["rest", "rpc"])
def test_continuing_another_tenants_task_finds_no_task(tenant_keyed, binding):
    _, acme, beta, _ = tenant_keyed
    acme.agent = beta.agent = "chat"
    task = rpc_send(acme, "acme")
    for tenant in ("beta", "acme"):
        fields = dict(taskId=task["id"], contextId=task["contextId"])
        if binding == "rest":
            task_not_found(*rest_send(beta, tenant, "more", **fields), task["id"],
                           binding)
        else:
            task_not_found(*rpc(beta, "SendMessage", {
                "message": message("more", version="1.0", **fields)}, tenant), task["id"], binding)
    status, got = rest(acme, "GET", "/tasks/" + task["id"], "acme")
    assert len(got["history"]) == 2  # nothing joined it


@pytest.mark.parametrize("binding", ["rest", "rpc"])
def test_another_tenant_or_none_is_no_agent_for_agent_calls(tenant_keyed, binding):
    _, acme, beta, plain = tenant_keyed
    rpc_send(acme, "acme")
    for caller, tenant in ((beta, "acme"), (plain, "acme"), (acme, None),
                           (acme, "beta"), (acme, "zzz"), (acme, "Acme")):
        if binding == "rest":
            agent_not_found(*rest(caller, "GET", "/tasks", tenant), binding)
            agent_not_found(*rest_send(caller, tenant), binding)
        else:
            agent_not_found(*rpc(caller, "ListTasks", {}, tenant), binding)
            agent_not_found(*rpc(caller, "SendMessage",
                                 {"message": message(version="1.0")}, tenant), binding)
    status, body = rpc(beta, "ListTasks", {}, "beta")
    assert body["result"]["tasks"] == [] and body["result"]["totalSize"] == 0


def test_an_agent_of_other_tenants_is_no_agent_in_this_one(make_app, database):
    def register(a2a):
        a2a.add_agent("solo", lambda turn: "hi", tenants=["gamma"])

    app, _ = make_app(A2A_TENANTS="acme", A2A_DATABASE=database, register=register)
    caller = Rpc(app.test_client(), version="1.0")
    status, body = rest_send(caller, "gamma", agent="solo")
    assert status == 200 and body["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    agent_not_found(*rest_send(caller, "gamma"), "rest")
    status, body = rest_send(caller, "acme", agent="solo")
    assert status == 200


# -- the storage's partition (one anonymous caller in every tenant) -----------------


@pytest.mark.parametrize("binding", ["rest", "rpc"])
def test_the_storage_keeps_tenants_apart_for_one_caller(open_app, binding):
    caller = open_app
    caller.agent = "chat"
    task_id = rpc_send(caller, "acme")["id"]
    for tenant in ("beta", None):
        if binding == "rest":
            task_not_found(*rest(caller, "GET", "/tasks/" + task_id, tenant),
                           task_id, binding)
            task_not_found(*rest(caller, "POST", "/tasks/%s:cancel" % task_id,
                                 tenant, {}), task_id, binding)
            task_not_found(*rest_send(caller, tenant, "more", taskId=task_id),
                           task_id, binding)
            status, page = rest(caller, "GET", "/tasks", tenant)
            assert status == 200 and page["tasks"] == [] and page["totalSize"] == 0
        else:
            task_not_found(*rpc(caller, "GetTask", {"id": task_id}, tenant),
                           task_id, binding)
            task_not_found(*rpc(caller, "CancelTask", {"id": task_id}, tenant),
                           task_id, binding)
            task_not_found(*rpc(caller, "SendMessage", {"message": message(
                "more", taskId=task_id, version="1.0")}, tenant), task_id, binding)
            status, body = rpc(caller, "ListTasks", {}, tenant)
            assert body["result"]["tasks"] == [] and body["result"]["totalSize"] == 0


def test_a_context_id_joins_only_its_tenants_conversation(open_app):
    caller = open_app
    caller.agent = "memo"
    first = rpc_send(caller, "acme", contextId="ctx-shared")
    assert first["status"]["message"]["parts"][0]["text"] == "0 earlier"
    again = rpc_send(caller, "acme", contextId="ctx-shared")
    assert again["status"]["message"]["parts"][0]["text"] == "2 earlier"
    other = rpc_send(caller, "beta", contextId="ctx-shared")
    assert other["status"]["message"]["parts"][0]["text"] == "0 earlier"
    none = rpc_send(caller, None, contextId="ctx-shared")
    assert none["status"]["message"]["parts"][0]["text"] == "0 earlier"
    status, body = rpc(caller, "ListTasks", {"contextId": "ctx-shared"}, "beta")
    assert [t["id"] for t in body["result"]["tasks"]] == [other["id"]]


@pytest.mark.parametrize("binding", ["rest", "rpc"])
def test_a_message_id_is_a_replay_only_in_its_tenant(open_app, binding):
    caller = open_app
    send = (lambda tenant, text: rest_send(caller, tenant, text, message_id="m-once")[1]
            ["task"]) if binding == "rest" else (
        lambda tenant, text: rpc_send(caller, tenant, text, message_id="m-once"))
    acme = send("acme", "hello")
    assert send("acme", "hello")["id"] == acme["id"]  # a replay in acme
    beta = send("beta", "other words")  # not MessageIdReused: another tenant
    assert beta["id"] != acme["id"]
    assert beta["status"]["message"]["parts"][0]["text"] == "other words"
    none = send(None, "third")
    assert none["id"] not in (acme["id"], beta["id"])


def test_the_queue_quota_is_per_tenant(make_app, database):
    def register(a2a):
        a2a.add_agent("later", lambda turn: "done", background=True)

    app, _ = make_app(A2A_TENANTS=TENANTS, A2A_DATABASE=database,
                      A2A_QUEUE_LIMIT_PER_CALLER=1, register=register)
    caller = Rpc(app.test_client(), agent="later", version="1.0")

    def queue(tenant):
        return rpc(caller, "SendMessage", {
            "message": message(version="1.0"),
            "configuration": {"returnImmediately": True}}, tenant)

    for tenant in ("acme", "beta", None):  # no worker: each stays queued
        status, body = queue(tenant)
        assert status == 200 and body["result"]["task"]["status"]["state"] == \
            "TASK_STATE_WORKING", body
    status, body = queue("acme")
    assert status == 429 and "A2A_QUEUE_LIMIT_PER_CALLER" in body["error"]["message"]


# -- keys and users of a tenant -------------------------------------------------------


def test_a_key_of_a_tenant_no_longer_served_is_refused_and_its_data_kept(
        make_app, database):
    app, _ = make_app(A2A_AUTH="required", A2A_TENANTS="acme,gone",
                      A2A_DATABASE=database)
    key = app.extensions["a2a"].credentials.create_key(None, "g", tenant="gone")[1]
    task_id = rpc_send(Rpc(app.test_client(), key=key, version="1.0"), "gone")["id"]
    app.extensions["a2a"].storage.close()

    app, _ = make_app(A2A_AUTH="required", A2A_TENANTS="acme",
                      A2A_DATABASE=database)
    status, body = rest(Rpc(app.test_client(), key=key, version="1.0"), "GET",
                        "/tasks/" + task_id, "gone")
    assert status == 401
    assert body["error"]["message"] == ("These credentials belong to tenant 'gone', which "
                               "this service no longer serves.")
    page = app.extensions["a2a"].storage.list_tasks(tenant="gone")
    assert [t.id for t in page.tasks] == [task_id]


def test_a_basic_user_of_a_tenant_acts_in_it_only(make_app, database):
    from helpers import basic

    app, _ = make_app(A2A_AUTH="required", A2A_TENANTS=TENANTS, A2A_DATABASE=database)
    app.extensions["a2a"].credentials.create_user("ann", "pw-ann-1", tenant="acme")
    caller = Rpc(app.test_client(), version="1.0")
    caller.headers.update(basic("ann", "pw-ann-1"))
    task_id = rpc_send(caller, "acme")["id"]
    agent_not_found(*rpc(caller, "ListTasks", {}), "rpc")
    task_not_found(*rpc(caller, "GetTask", {"id": task_id}, "beta"), task_id, "rpc")


def test_a_background_turn_runs_in_its_tenant(make_app, database):
    """The worker hands the agent the tenant the turn was sent in, and its
    conversation is that tenant's."""
    import threading

    from a2a_flask.worker import Worker

    def register(a2a):
        a2a.add_agent("later", lambda turn: "%s: %d earlier" % (
            turn.tenant or "-", len(turn.context_history)), background=True)

    app, _ = make_app(A2A_TENANTS=TENANTS, A2A_DATABASE=database,
                      A2A_BLOCKING_WAIT_SECONDS=10, register=register)
    with app.app_context():
        runner = Worker(app.extensions["a2a"], threads=2, grace=5)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    try:
        caller = Rpc(app.test_client(), agent="later", version="1.0")
        texts = [rpc_send(caller, tenant, contextId="ctx-bg")["status"]["message"]
                 ["parts"][0]["text"] for tenant in ("acme", "acme", "beta", None)]
    finally:
        runner.stop()
        thread.join(10)
    assert texts == ["acme: 0 earlier", "acme: 2 earlier", "beta: 0 earlier",
                     "-: 0 earlier"]
