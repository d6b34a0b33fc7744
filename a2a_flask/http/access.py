"""One record per call to an agent (JSON-RPC or HTTP+JSON), on the logger
``a2a_flask.access``.

The record names the agent, the method, the task and context, the caller's id
(an API key's id or a user name: never a key or a password), the outcome (the
task's state, or the JSON-RPC error code), the duration in milliseconds and
the protocol version of the call (0.3 or 1.0).
``http/pipeline.py`` notes what it read (``note``); ``logged_call`` wraps it and
reads the outcome from the answer it made.
"""

import json
import logging
import time

from flask import g

log = logging.getLogger("a2a_flask.access")


def note(envelope, caller, version="0.3"):
    """What the call was, in which protocol version, and who made it, as far
    as ``_rpc`` got."""
    g.a2a_call = (envelope, caller)
    g.a2a_version = version


def note_result(result):
    """The result a call answers with (its JSON-RPC ``result``): the record
    reads it rather than parsing the answer's body again (~10-30 us)."""
    g.a2a_result = result


def _task_from_params(params):
    if not isinstance(params, dict):
        return None
    message = params.get("message")
    task_id = params.get("id")
    if task_id is None and isinstance(message, dict):
        task_id = message.get("taskId")
    return task_id if isinstance(task_id, str) else None


def call_fields(agent, envelope, caller, response, result=None):
    """The fields of the access record of one answered call (``result``: its
    JSON-RPC result when noted, else read from the response)."""
    fields = {"agent": agent,
              "method": envelope.method if envelope is not None else None,
              "version": g.get("a2a_version", "0.3"),
              "taskId": None, "contextId": None,
              "caller": caller.id if caller is not None else None,
              "state": None, "code": None, "status": response.status_code}
    if result is not None:
        body = {"result": result}
    else:
        try:
            body = json.loads(response.get_data())
        except ValueError:  # not ours to judge: the record says what is known
            body = {}
    result, error = body.get("result"), body.get("error")
    if error is None and "code" in body:
        error = body  # a bare error object (401)
    if result is None and error is None:
        result = body  # an HTTP+JSON answer
    if error is None and isinstance(result, dict) and "task" in result:
        result = result["task"]  # A2A 1.0 SendMessageResponse
    if isinstance(result, dict) and (result.get("kind") == "task" or (
            "status" in result and "id" in result)):
        fields.update(taskId=result.get("id"), contextId=result.get("contextId"),
                      state=(result.get("status") or {}).get("state"))
    elif isinstance(error, dict):
        fields["code"] = error.get("code")
        data = error.get("data")
        if isinstance(data, dict) and isinstance(data.get("taskId"), str):
            fields["taskId"] = data["taskId"]
    if fields["taskId"] is None and envelope is not None:
        fields["taskId"] = _task_from_params(envelope.params)
    return fields


def _text(fields):
    outcome = fields["state"] if fields["state"] is not None else (
        fields["code"] if fields["code"] is not None else "ok")
    return ("call agent=%s method=%s task=%s context=%s caller=%s outcome=%s "
            "ms=%.1f version=%s" % (
                fields["agent"], fields["method"] or "-", fields["taskId"] or "-",
                fields["contextId"] or "-", fields["caller"] or "-", outcome,
                fields["ms"], fields["version"]))


def logged_call(agent, answer, observe=None):
    """``answer()``, the call's response, with its access record logged (and
    passed to ``observe(fields)``, the metrics, when given)."""
    g.a2a_call = (None, None)
    g.a2a_version = "0.3"
    g.a2a_result = None
    started = time.perf_counter()
    response = answer()
    elapsed_ms = (time.perf_counter() - started) * 1000.0
    if observe is None and not log.isEnabledFor(logging.INFO):
        return response
    envelope, caller = g.a2a_call
    fields = call_fields(agent, envelope, caller, response, g.a2a_result)
    fields["ms"] = round(elapsed_ms, 1)
    if log.isEnabledFor(logging.INFO):
        # log.info() less its search of the stack for the caller's source
        # line, which no format here shows: a record on every call.
        log.handle(log.makeRecord(log.name, logging.INFO, __file__, 0,
                                  _text(fields), None, None, extra=fields))
    if observe is not None:
        observe(fields)
    return response
