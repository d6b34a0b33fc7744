"""API keys made by ``flask a2a keys`` (another process) and used by every
gunicorn worker: accepted, scoped, revoked from the next request on."""

import re

from serving import assert_clean_log, create_api_key, flask_cli


def _bearer(key):
    return {"Authorization": "Bearer " + key}


def test_command_line_keys_in_every_worker(start_server):
    server = start_server("wsgi:app", workers=2, auth="key")
    assert server.headers["Authorization"].startswith("Bearer ")

    # No credentials: 401, a bare error object, a challenge.
    anonymous = server.rpc("echo", anonymous=True)
    status, answer = anonymous.call("message/send", {"message": {
        "role": "user", "messageId": "m-anon", "parts": [{"kind": "text",
                                                         "text": "hi"}]}})
    assert status == 401
    assert answer["code"] == -32600 and "jsonrpc" not in answer
    assert anonymous.last_response.headers["WWW-Authenticate"]
    # Public cards need none.
    card = server.client(anonymous=True).get("/api/v1/agents/echo/.well-known/"
                                             "agent-card.json")
    assert card.status_code == 200 and card.get_json()["name"] == "echo"

    # The key made before the start works; so does one made while it runs.
    owner_task = server.rpc("echo").send("mine")
    assert owner_task["status"]["state"] == "completed"
    scoped_key = create_api_key(server.database, "--agents", "echo",
                                "--label", "scoped")
    scoped = server.rpc("echo", headers=_bearer(scoped_key))
    for i in range(4):  # whichever worker answers
        assert scoped.send("scoped %d" % i)["status"]["state"] == "completed"
    # Scoped to echo: chat is 403; another caller's task does not exist.
    status, error = scoped.error("tasks/get", {"id": "x"}, agent="chat")
    assert (status, error["code"]) == (403, -32600)
    status, error = scoped.error("tasks/get", {"id": owner_task["id"]})
    assert (status, error["code"]) == (200, -32001)

    # Revoked from the command line: refused by every worker at once.
    listing = flask_cli(server.database, "a2a", "keys", "list")
    key_id = re.search(r"^(\S+)\s+%s\.\.\.\s+scoped\b" % re.escape(scoped_key[:10]),
                       listing, re.M).group(1)
    flask_cli(server.database, "a2a", "keys", "revoke", key_id)
    for i in range(4):
        status, answer = scoped.call("tasks/get", {"id": owner_task["id"]})
        assert (status, answer["code"]) == (401, -32600)
    assert server.rpc("echo").result("tasks/get", {"id": owner_task["id"]}) \
        == owner_task

    server.stop()
    log = server.log()
    assert_clean_log(log)
    assert sorted(set(server.access_statuses(log))) == [200, 401, 403]
