"""An A2A 1.0 caller over Flask's test client, both bindings: every answer
is checked against the 1.0 proto (``proto.check_exchange``) before a test
sees it."""

import itertools

from . import proto

_ids = itertools.count(1)


def user_message(text="hello", message_id=None, **fields):
    message = {"messageId": message_id or "m-%d" % next(_ids),
               "role": "ROLE_USER", "parts": [{"text": text}]}
    message.update(fields)
    return message


class Caller:
    """One caller (``key``, or anonymous with A2A_AUTH=off) of one agent."""

    def __init__(self, client, agent="echo", key=None, prefix="/api/v1",
                 version="1.0"):
        self.client, self.agent, self.prefix = client, agent, prefix
        self.headers = {}
        if version is not None:
            self.headers["A2A-Version"] = version
        if key is not None:
            self.headers["X-API-Key"] = key

    def _headers(self, headers):
        merged = dict(self.headers)
        merged.update(headers or {})
        return {k: v for k, v in merged.items() if v is not None}

    # -- JSON-RPC ---------------------------------------------------------------

    def rpc(self, method, params=None, headers=None, path=None, agent=None):
        """(HTTP status, body) of one JSON-RPC call, checked."""
        request = {"jsonrpc": "2.0", "id": next(_ids), "method": method}
        if params is not None:
            request["params"] = params
        path = path or "%s/agents/%s/a2a" % (self.prefix, agent or self.agent)
        response = self.client.post(path, json=request,
                                    headers=self._headers(headers))
        assert response.mimetype == "application/json", response.data
        body = response.get_json()
        proto.check_exchange({"method": "POST", "url": path, "request": request,
                              "status": response.status_code, "body": body})
        return response.status_code, body

    def result(self, method, params=None, **kwargs):
        status, body = self.rpc(method, params, **kwargs)
        assert status == 200 and "result" in body, body
        return body["result"]

    def error(self, method, params=None, **kwargs):
        status, body = self.rpc(method, params, **kwargs)
        assert "error" in body, body
        return body["error"]

    def send(self, text="hello", **fields):
        return self.result("SendMessage",
                           {"message": user_message(text, **fields)})["task"]

    # -- HTTP+JSON --------------------------------------------------------------

    def rest(self, method, path, body=None, query=None, headers=None, base=None):
        """(HTTP status, body) of one HTTP+JSON call, checked."""
        base = base if base is not None else "%s/agents/%s/rest" % (
            self.prefix, self.agent)
        kwargs = {"json": body} if body is not None else {}
        response = self.client.open(base + path, method=method,
                                    query_string=query,
                                    headers=self._headers(headers), **kwargs)
        assert response.mimetype == "application/a2a+json", response.data
        answer = response.get_json()
        proto.check_exchange({"method": method, "url": base + path,
                              "request": body, "status": response.status_code,
                              "body": answer})
        return response.status_code, answer


def detail(error, type_name):
    """The detail of ``type_name`` (``ErrorInfo``, ``BadRequest``) in a 1.0
    error's ``data`` or ``details``."""
    found = [d for d in error.get("data", error.get("details", []))
             if d["@type"] == "type.googleapis.com/google.rpc." + type_name]
    assert len(found) == 1, error
    return found[0]
