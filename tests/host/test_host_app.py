"""Issue 7 end to end: a2a_flask mounted in a real host app (hostapp.py),
everything through HTTP (Flask's test client; one gunicorn run)."""

import logging
import sqlite3

import pytest
from flask.cli import FlaskGroup

pytest.importorskip("flask_migrate")
pytest.importorskip("flask_login")
pytest.importorskip("flask_wtf")
# Flask-Migrate's env.py template calls a deprecated Flask-SQLAlchemy method.
pytestmark = [pytest.mark.filterwarnings("ignore:'get_engine' is deprecated"),
              pytest.mark.compat]  # .ci/matrix runs it on every leg

import hostapp  # noqa: E402
from a2a_flask.errors import (  # noqa: E402
    AgentNotFoundError, TaskNotFoundError, UnauthenticatedError,
)
from a2a_flask.testing import A2AClient, make_key  # noqa: E402

OUR_TABLES = {"a2a_schema_version", "a2a_tasks", "a2a_messages",
              "a2a_artifacts", "a2a_deliveries", "a2a_api_keys", "a2a_users",
              "a2a_turns"}


def flask_db(app, *args):
    """``flask db ARGS``. Alembic's env.py runs ``logging.config.fileConfig``,
    which disables every logger already made (a2a_flask's too) and replaces
    the root's handlers (pytest's): all of it is put back afterwards."""
    root = logging.getLogger()
    kept = [(logger, logger.disabled, logger.level, logger.handlers[:])
            for logger in [root] + [
                logger for logger in logging.Logger.manager.loggerDict.values()
                if isinstance(logger, logging.Logger)]]
    try:
        # Through FlaskGroup, as the flask command runs it: Flask-Migrate
        # before 3.0 adds "db" as a plugin command, not to app.cli.
        flask_command = FlaskGroup(create_app=lambda *_: app, load_dotenv=False)
        result = app.test_cli_runner().invoke(flask_command, ["db"] + list(args))
    finally:
        for logger, disabled, level, handlers in kept:
            logger.disabled, logger.handlers[:] = disabled, handlers
            logger.setLevel(level)  # and clears the loggers' level caches
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def migrated_host(tmp_path):
    """The host app on a fresh shared file, its schema made by
    ``flask db init / migrate / upgrade``; users ann and bob."""
    database, migrations = tmp_path / "host.sqlite3", tmp_path / "migrations"
    app = hostapp.create_app(str(database), str(migrations))
    flask_db(app, "init")
    flask_db(app, "migrate", "-m", "users")
    flask_db(app, "upgrade")
    with app.app_context():
        hostapp.add_user("ann", "token-of-ann")
        hostapp.add_user("bob", "token-of-bob")
    app.migrations = migrations
    return app


@pytest.fixture
def host(tmp_path):
    return migrated_host(tmp_path)


def tables(app):
    with sqlite3.connect(app.config["A2A_DATABASE"]) as conn:
        return {row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_flask_db_migrate_leaves_our_tables_alone(host):
    [script] = (host.migrations / "versions").glob("*.py")
    text = script.read_text()
    assert "op.create_table('user'" in text
    assert "a2a_" not in text
    assert OUR_TABLES | {"user", "alembic_version"} <= tables(host)
    output = flask_db(host, "migrate", "-m", "nothing")
    assert "No changes in schema detected." in output
    # The service still works on the shared file.
    task = A2AClient(host, key=make_key(host)).send("ask")
    assert task["status"]["state"] == "input-required"


def test_host_tokens_and_sessions_are_the_same_caller(host):
    ann = A2AClient(host, headers={"Authorization": "Bearer token-of-ann"})
    task = ann.send("the printer")
    assert task["status"]["state"] == "completed"
    assert task["artifacts"][0]["parts"][0]["text"] == (
        "Hello ann, about: the printer")
    # The host's own views take the same token (Flask-Login request_loader).
    response = host.test_client().get(
        "/me", headers={"Authorization": "Bearer token-of-ann"})
    assert response.get_json() == {"user": "ann"}
    # Logged in through the host's CSRF-protected form: the same tasks.
    browser = host.test_client()
    token = browser.get("/login").get_json()["csrf_token"]
    assert browser.post("/login", data={"name": "ann", "csrf_token": token}
                        ).get_json() == {"user": "ann"}
    assert A2AClient(browser).get(task["id"])["id"] == task["id"]
    # Another user's token does not see it.
    bob = A2AClient(host, headers={"Authorization": "Bearer token-of-bob"})
    with pytest.raises(TaskNotFoundError) as raised:
        bob.get(task["id"])
    assert raised.value.code == -32001


@pytest.mark.parametrize("token", ["forged", "a2a_" + "x" * 43])
def test_unknown_bearer_tokens_are_401(host, token):
    client = A2AClient(host, headers={"Authorization": "Bearer " + token})
    with pytest.raises(UnauthenticatedError) as raised:
        client.send("hi")
    assert (raised.value.code, raised.value.http_status) == (-32600, 401)


def test_csrf_protects_the_hosts_forms_not_our_calls(host):
    browser = host.test_client()
    response = browser.post("/login", data={"name": "ann"})
    assert response.status_code == 400
    assert response.get_json() == {"host_error": "Bad Request"}
    # A JSON call with credentials, no CSRF token.
    key = make_key(host)
    assert A2AClient(browser, key=key).send("ask")["kind"] == "task"
    assert A2AClient(browser, key=key, agent="helpdesk").send("ask")["kind"] == "task"


def test_host_error_handlers_keep_to_host_pages(host):
    client = host.test_client()
    response = client.put("/")
    assert response.status_code == 405
    assert response.get_json() == {"host_error": "Method Not Allowed"}
    response = client.get("/nope")
    assert response.status_code == 404
    assert b"host page not found" in response.data
    for method, path, status in [
            ("GET", "/api/v1/agents/helpdesk/nope", 404),
            ("GET", "/a2a/nope", 404),
            ("GET", "/a2a", 405),
            ("DELETE", "/api/v1/agents/helpdesk/a2a", 405)]:
        response = client.open(path, method=method)
        assert response.status_code == status
        assert response.mimetype == "application/json"
        assert response.get_json()["code"] == -32600
    with pytest.raises(AgentNotFoundError) as raised:
        A2AClient(host, key=make_key(host), agent="nobody").send("hi")
    assert (raised.value.code, raised.value.http_status) == (-32600, 404)


def test_a_second_init_app_is_refused(host):
    with pytest.raises(RuntimeError, match="already set up"):
        hostapp.a2a.init_app(host)


def test_under_gunicorn(tmp_path, start_server):
    """Two workers, the host's pages and ours, from one shared file."""
    import requests

    host = migrated_host(tmp_path)
    database = host.config["A2A_DATABASE"]
    server = start_server(app="hostapp:app", workers=2, database=database,
                          auth="off",
                          env={"HOST_DATABASE": database,
                               "HOST_MIGRATIONS": str(host.migrations)})
    ann = {"Authorization": "Bearer token-of-ann"}
    for n in range(6):
        response = requests.post(server.url + "/a2a", headers=ann, timeout=10, json={
            "jsonrpc": "2.0", "id": n, "method": "message/send", "params": {
                "message": {"role": "user", "messageId": "m-%d" % n,
                            "parts": [{"kind": "text", "text": "n%d" % n}]}}})
        assert response.status_code == 200
        assert response.json()["result"]["status"]["state"] == "completed"
    assert requests.get(server.url + "/me", headers=ann, timeout=10).json() == {
        "user": "ann"}
    response = requests.get(server.url + "/api/v1/agents/helpdesk/x", timeout=10)
    assert (response.status_code, response.json()["code"]) == (404, -32600)
    response = requests.put(server.url + "/", timeout=10)
    assert response.json() == {"host_error": "Method Not Allowed"}
