"""Test your agents: an API key for an app, and a small A2A client over
Flask's test client.

    from a2a_flask.testing import A2AClient, make_key

    client = A2AClient(app, key=make_key(app), agent="summarizer")
    task = client.send("Summarize this.")
    assert task["status"]["state"] == "completed"
"""

from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional

from flask import Flask
from flask.testing import FlaskClient

from .client.errors import rpc_result
from .client.protocols import rpc_request
from .client.shapes import user_message

if TYPE_CHECKING:  # pragma: no cover
    from .app_state import AppState


def _app_state(app: Flask) -> "AppState":
    app_state = app.extensions.get("a2a")
    if app_state is None:
        raise RuntimeError("a2a_flask is not set up on app %r: call "
                           "A2A(app) or init_app(app) first." % app.name)
    return app_state


def make_key(app: Flask, label: Optional[str] = "test",
             agents: Optional[Iterable[str]] = None) -> str:
    """A new API key of ``app``'s service (for ``agents``; None: every
    agent), as ``flask a2a keys create`` makes one; returns the secret."""
    return _app_state(app).credentials.create_key(agents, label)[1]


class A2AClient:
    """Calls an app's agents through Flask's test client.

    ``app_or_client``: the Flask app or one of its test clients. ``key``: an
    API key (see ``make_key``), sent as a bearer token; ``headers``: any
    other headers (a host token, Basic credentials). ``agent``: the agent
    called when a call names none; None: the default agent, at ``/a2a``.
    Each method returns the JSON-RPC ``result`` or raises the agent's error
    answer as an ``a2a_flask.errors.A2AError`` (``TaskNotFoundError``, ...).
    """

    def __init__(self, app_or_client: Any, key: Optional[str] = None,
                 agent: Optional[str] = None,
                 headers: Optional[Dict[str, str]] = None):
        if isinstance(app_or_client, FlaskClient):
            self.client = app_or_client
        else:
            self.client = app_or_client.test_client()
        self.agent = agent
        self.headers = dict(headers or {})
        if key is not None:
            self.headers["Authorization"] = "Bearer " + key

    def path(self, agent: Optional[str] = None) -> str:
        """The JSON-RPC endpoint of ``agent`` (or of the client's agent)."""
        agent = agent or self.agent
        if agent is None:
            return "/a2a"
        settings = _app_state(self.client.application).settings
        return "%s/agents/%s/a2a" % (settings.url_prefix, agent)

    def call(self, method: str, params: Any, agent: Optional[str] = None) -> Any:
        """One JSON-RPC call: its result, or the error answer raised."""
        response = self.client.post(self.path(agent), headers=self.headers,
                                    json=rpc_request(method, params))
        return rpc_result(response.status_code, response.get_json(silent=True),
                          response.data)

    def send(self, text: Optional[str] = None, agent: Optional[str] = None,
             task_id: Optional[str] = None, context_id: Optional[str] = None,
             message_id: Optional[str] = None,
             parts: Optional[List[Dict[str, Any]]] = None,
             metadata: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """``message/send`` of a user message (``text``, or ``parts``); the
        task. A ``task_id`` continues a task waiting for input."""
        params = {"message": user_message(text, parts, message_id, task_id,
                                          context_id)}
        if metadata is not None:
            params["metadata"] = metadata
        return self.call("message/send", params, agent)

    def get(self, task_id: str, history_length: Optional[int] = None,
            agent: Optional[str] = None) -> Dict[str, Any]:
        """``tasks/get``: the task, with at most ``history_length`` messages."""
        params: Dict[str, Any] = {"id": task_id}
        if history_length is not None:
            params["historyLength"] = history_length
        return self.call("tasks/get", params, agent)

    def cancel(self, task_id: str, agent: Optional[str] = None) -> Dict[str, Any]:
        """``tasks/cancel``: the canceled task."""
        return self.call("tasks/cancel", {"id": task_id}, agent)
