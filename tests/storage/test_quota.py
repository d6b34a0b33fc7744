"""A2A_MAX_STORED_BYTES_PER_CALLER: one caller's stored tasks are counted as
they are written and pruned (triggers of the schema, migrations.STORED_BYTES),
and past its quota its sends are refused (429, -32000, reason
QUOTA_EXCEEDED, "quota" in the message) while other callers, its reads and
the retries of what it sent still work. On SQLite and PostgreSQL."""

import psycopg
import pytest

from a2a_flask.config import DEFAULTS
from a2a_flask.storage.postgres import migrations as pg_migrations
from a2a_flask.storage.sqlite import migrations as sqlite_migrations
from helpers import Rpc, detail, message

QUOTA = 40000
FUTURE = "9999-01-01T00:00:00.000Z"


def _register(a2a):
    a2a.add_agent("queued", lambda turn: "later", background=True)


@pytest.fixture(params=["sqlite", "postgres"])
def service(request, keyed):
    """(app, rpc of key a, rpc of key b, 1.0 caller of key a)."""
    config = {"A2A_AUTH": "required", "A2A_MAX_STORED_BYTES_PER_CALLER": str(QUOTA)}
    if request.param == "postgres":
        config["A2A_DATABASE"] = request.getfixturevalue("postgres_url")
    one, two = keyed("a", "b", register=_register, version="0.3", **config)
    app = one.app
    app.backend = request.param
    app.owners = ["key:" + rpc.key_id for rpc in (one, two)]
    yield app, one, two, Rpc(one.client, key=one.key, version="1.0")
    app.extensions["a2a"].storage.close()


def _sql(app, query, args=()):
    storage = app.extensions["a2a"].storage
    if app.backend == "sqlite":
        return storage.connection().execute(query.replace("%s", "?"), args).fetchall()
    with psycopg.connect(storage.url, autocommit=True) as conn:
        return conn.execute(query, args).fetchall()


def stored(app, owner):
    return _sql(app, "SELECT coalesce(sum(bytes), 0) FROM a2a_stored_bytes"
                " WHERE owner = %s", (owner,))[0][0]


def recounted(app, owner):
    """What the owner's rows take, counted from scratch as the triggers do."""
    length = "length(CAST(%s AS BLOB))" if app.backend == "sqlite" else "octet_length(%s)"
    return _sql(app, (
        "SELECT coalesce(sum(b), 0) FROM (SELECT " + length % "body" + " + 256 AS b"
        " FROM a2a_messages WHERE owner = %s UNION ALL SELECT coalesce("
        + length % "metadata" + ", 0) + 320 FROM a2a_tasks WHERE owner = %s"
        " UNION ALL SELECT " + length % "a.body" + " + 256 FROM a2a_artifacts a"
        " JOIN a2a_tasks t ON t.id = a.task_id WHERE t.owner = %s) x"),
        (owner, owner, owner))[0][0]


def test_past_the_quota_sends_are_refused_in_every_binding_others_unaffected(service):
    app, rpc, other, v10 = service
    owner = app.owners[0]
    first = rpc.send("x" * 15000)  # echo: message, answer and artifact: ~45 KB
    assert stored(app, owner) == recounted(app, owner) > QUOTA
    counted = stored(app, owner)

    status, answer = rpc.call("message/send", {"message": message("more")})
    assert status == 429 and rpc.last_response.headers["Retry-After"] == "60"
    error = answer["error"]
    assert error["code"] == -32000
    assert error["data"] == {"retryAfter": 60, "quotaBytes": QUOTA, "storedBytes": counted}
    assert "quota" in error["message"] and "nothing was stored" in error["message"]
    assert "full" not in error["message"]

    status, answer = v10.call("SendMessage", {"message": message("more", version="1.0")})
    assert status == 429 and answer["error"]["code"] == -32000
    assert detail(answer["error"], "ErrorInfo")["reason"] == "QUOTA_EXCEEDED"
    status, answer = v10.rest("POST", "/message:send", {"message": message("more", version="1.0")})
    assert status == 429 and answer["error"]["status"] == "RESOURCE_EXHAUSTED"
    assert detail(answer["error"], "ErrorInfo")["reason"] == "QUOTA_EXCEEDED"
    assert "quota" in answer["error"]["message"]

    # A background agent's queue refuses it too.
    status, answer = rpc.call("message/send", {"message": message("q"),
                                               "configuration": {"blocking": False}},
                              agent="queued")
    assert status == 429 and answer["error"]["code"] == -32000

    # Nothing was stored; reads and a retry of what was accepted still work.
    assert stored(app, owner) == counted
    status, page = v10.rest("GET", "/tasks")
    assert (status, page["totalSize"]) == (200, 1)
    assert rpc.result("tasks/get", {"id": first["id"]})["id"] == first["id"]
    again = rpc.result("message/send", {"message": first["history"][0]})
    assert again["id"] == first["id"]
    # Another caller is not limited by this one.
    assert other.send("b")["status"]["state"] == "completed"


def test_pruning_gives_the_quota_back(service):
    app, rpc, other, v10 = service
    owner = app.owners[0]
    rpc.send("x" * 15000)
    assert rpc.call("message/send", {"message": message("more")})[0] == 429
    storage = app.extensions["a2a"].storage
    assert sum(batch["tasks"] for batch in storage.prune(FUTURE)) == 1
    assert stored(app, owner) == recounted(app, owner) == 0
    assert rpc.send("again")["status"]["state"] == "completed"


def test_every_write_is_counted_exactly(service, make_app):
    """Continuations, artifacts, metadata, an outcome, a cancel and a move
    to another owner: the count stays what the rows take."""
    app, rpc, other, v10 = service
    a, b = app.owners
    chat = Rpc(rpc.client, agent="chat", headers=rpc.headers)
    first = chat.result("message/send", {"message": message("hello"),
                                         "metadata": {"note": "n" * 500}})
    chat.send("and more", taskId=first["id"], contextId=first["contextId"])
    rpc.send("y" * 3000)
    assert stored(app, a) == recounted(app, a) > 0
    assert stored(app, b) == recounted(app, b) == 0
    storage = app.extensions["a2a"].storage
    storage.reassign_tasks(a, b)
    assert stored(app, a) == recounted(app, a) == 0
    assert stored(app, b) == recounted(app, b) > 0


def test_no_quota_with_0_and_on_by_default(make_app):
    assert DEFAULTS["A2A_MAX_STORED_BYTES_PER_CALLER"] >= 1 << 30
    settings = make_app()[0].extensions["a2a"].settings
    assert settings.max_stored_bytes_per_caller == DEFAULTS["A2A_MAX_STORED_BYTES_PER_CALLER"]
    settings = make_app(A2A_MAX_STORED_BYTES_PER_CALLER="0")[0].extensions["a2a"].settings
    assert settings.max_stored_bytes_per_caller is None
    with pytest.raises(ValueError, match="A2A_MAX_STORED_BYTES_PER_CALLER"):
        make_app(A2A_MAX_STORED_BYTES_PER_CALLER="-1")


_COUNT_OBJECTS = {
    "sqlite": ["DROP TRIGGER a2a_%s" % name for name in (
        "messages_in", "messages_out", "messages_moved", "tasks_in", "tasks_out",
        "tasks_moved", "artifacts_in", "artifacts_out")] + ["DROP TABLE a2a_stored_bytes"],
    "postgres": ["DROP FUNCTION a2a_%s_bytes() CASCADE" % table
                 for table in ("messages", "tasks", "artifacts")]
    + ["DROP FUNCTION a2a_add_stored_bytes(text, bigint)", "DROP TABLE a2a_stored_bytes"],
}


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_migration_counts_what_is_stored(backend, make_app, monkeypatch, request):
    """A database written before the count's migration (its objects dropped,
    its version one lower): the migration counts the rows already there."""
    config = {}
    if backend == "postgres":
        config["A2A_DATABASE"] = request.getfixturevalue("postgres_url")
    app, _ = make_app(**config)
    app.backend = backend
    rpc = Rpc(app.test_client())
    rpc.send("z" * 2000)
    rpc.send("w")
    storage = app.extensions["a2a"].storage
    expected = storage.expected_version()
    for statement in _COUNT_OBJECTS[backend] + [
            "UPDATE a2a_schema_version SET version = %d" % (expected - 1)]:
        _sql_write(app, statement)
    assert storage.schema_version() == expected - 1
    # Wherever the integrator put this migration, it is the one missing here.
    module = sqlite_migrations if backend == "sqlite" else pg_migrations
    step = (sqlite_migrations._stored_bytes if backend == "sqlite"
            else pg_migrations.STORED_BYTES)
    monkeypatch.setattr(module, "MIGRATIONS",
                        [m for m in module.MIGRATIONS if m is not step] + [step])
    storage.close()
    storage.migrate()
    assert storage.schema_version() == expected
    assert stored(app, "anonymous") == recounted(app, "anonymous") > 4000
    storage.close()


def _sql_write(app, statement):
    storage = app.extensions["a2a"].storage
    if app.backend == "sqlite":
        with storage.transaction() as conn:
            conn.execute(statement)
        return
    with psycopg.connect(storage.url, autocommit=True) as conn:
        conn.execute(statement)
