"""FLOOR and PG FLOOR: the work a2a_flask's contract itself requires per
call, with nothing else around it.

The question it answers (issue 12: "if a target proves impossible on this
stack, show ... what the limit is, and how close we are to it"): how fast
could *any* implementation of this service go on gunicorn + Flask + SQLite
(or PostgreSQL), if it skipped every layer of ours and kept only what the
contract asks of each call:

- the JSON-RPC envelope and the params validated with the project's
  marshmallow schemas (the same ``a2a_flask.schemas`` objects);
- the API key, by its SHA-256: looked up once per process, then checked
  live in the first statement of every call (as a2a_flask does: a revoked
  key is refused at once by every worker);
- ``message/send``: the task stored as ``working`` (with the retry record
  and the user's message) and committed *before* the agent runs, then the
  outcome (state, the agent's message, the artifact) in a second
  transaction: the storage's own ``start_turn`` and ``finish_turn``, one
  statement each on both backends (on SQLite an INSERT into a view whose
  trigger writes the rows);
- ``tasks/get``: the storage's one-statement read of the task, its history
  and artifacts;
- the answer rendered as an A2A 0.3 Task.

No blueprint, no binding, no service layer, no access record, no card, no
error mapping: one Flask route, exactly like CEILING (``ceiling.py``), run by
gunicorn with the project's ``gunicorn.conf.py``:

    A2A_DATABASE=/path/db.sqlite3 gunicorn -w 2 --chdir bench/servers floor:app

The database and the key come from ``flask a2a keys create`` (bench/run.py
does it, as for US); ``A2A_DATABASE`` may be a ``postgresql://`` URL.

``FLOOR_WITHOUT=key,validation`` drops requirements, to price each
(bench/README.md, "The limit"): ``key`` takes the caller from the header
without any check; ``validation`` reads the envelope and params without
marshmallow. (The price of the second commit is DURABLE CEILING's with
``BENCH_WRITES=2``, see ``ceiling.py``.)
"""

import json
import os

from flask import Flask, jsonify, request

from a2a_flask.config import Settings
from a2a_flask.auth.credentials import hash_key
from a2a_flask.protocol.jsonrpc import ENVELOPE
from a2a_flask.protocol.v03.schemas import MESSAGE_SEND_PARAMS, TASK_QUERY_PARAMS
from a2a_flask.storage import open_storage
from a2a_flask.storage.common import new_id

AGENT = "echo"
WITHOUT = set(filter(None, os.environ.get("FLOOR_WITHOUT", "").split(",")))

app = Flask(__name__)
storage = open_storage(Settings({"A2A_DATABASE": os.environ["A2A_DATABASE"]},
                                app.instance_path))


@app.teardown_request
def _release(_exc):
    # The thread's connection back to the pool, as the package's pipeline
    # does: gthread runs requests on many threads, and a connection kept by
    # each would leave the pool empty (a 5 s wait, then a 500).
    storage.release_connection()


def _error(rid, code, message, status=200):
    body = {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}
    return jsonify(body), status


def _task(task_id, context_id, state, status_message, timestamp, artifacts, history):
    status = {"state": state, "timestamp": timestamp}
    if status_message is not None:
        status["message"] = status_message
    return {"kind": "task", "id": task_id, "contextId": context_id,
            "status": status, "artifacts": artifacts, "history": history}


def _load(schema, params):
    return params if "validation" in WITHOUT else schema.load(params)


_owners = {}  # key hash -> its owner, found once (a key's id never changes)


def _caller(auth):
    """(owner, key hash to check live) of the Bearer key, or (None, None)."""
    if "key" in WITHOUT:
        return "key:" + auth[-12:], None
    if not auth.startswith("Bearer "):
        return None, None
    key_hash = hash_key(auth[7:])
    owner = _owners.get(key_hash)
    if owner is None:
        key = storage.find_key(key_hash)
        if key is None:
            return None, None
        owner = _owners[key_hash] = "key:" + key.id
    return owner, key_hash


def _send(owner, key_hash, params):
    message = _load(MESSAGE_SEND_PARAMS, params)["message"]
    start = storage.start_turn(owner, AGENT, message,  # committed: working
                               remembered_key=key_hash)
    text = "".join(p.get("text", "") for p in message["parts"] if p["kind"] == "text")
    parts = [{"kind": "text", "text": text}]
    reply = {"kind": "message", "role": "agent", "messageId": new_id("msg_"),
             "parts": parts, "taskId": start.task_id, "contextId": start.context_id}
    artifact = {"artifactId": new_id("art_"), "parts": parts, "name": "response"}
    at = storage.finish_turn(start.task_id, owner, AGENT, "completed", reply, [artifact])
    return _task(start.task_id, start.context_id, "completed", reply, at,
                 [artifact], [start.message, reply])


def _get(owner, key_hash, params):
    task_id = _load(TASK_QUERY_PARAMS, params)["id"]
    t = storage.get_task(task_id, owner, AGENT, remembered_key=key_hash)
    return _task(t.id, t.context_id, t.state, t.status_message, t.updated_at,
                 t.artifacts, t.history)


@app.post("/rpc")
def rpc():
    call = _load(ENVELOPE, json.loads(request.get_data()))
    rid = call.get("id")
    owner, key_hash = _caller(request.headers.get("Authorization", ""))
    if owner is None:
        return _error(rid, -32600, "Unauthenticated", 401)
    if call["method"] == "message/send":
        result = _send(owner, key_hash, call.get("params"))
    elif call["method"] == "tasks/get":
        result = _get(owner, key_hash, call.get("params"))
    else:
        return _error(rid, -32601, "Method not found")
    return jsonify({"jsonrpc": "2.0", "id": rid, "result": result})
