"""The A2A methods, each a function of (call, params) returning the result.

``find_method`` looks a method up in ``METHODS`` (an unknown one is -32601);
``Method.load`` checks its params with its schema (-32602), once the caller
is authenticated; ``Method.run`` comes after.
"""

from typing import Dict

from . import errors
from .agents import Turn, run_turn
from .cards import agent_card
from .schemas import (
    MESSAGE_SEND_PARAMS, TASK_ID_PARAMS, TASK_QUERY_PARAMS, load_params,
)
from .store import clamp_history, task_view

METHODS: Dict[str, "Method"] = {}


class Method:
    """A method: the schema of its params, and the function that runs it."""

    __slots__ = ("name", "schema", "run")

    def __init__(self, name, schema, run):
        self.name = name
        self.schema = schema
        self.run = run

    def load(self, params):
        """The validated params, or ``InvalidParams`` naming the bad field."""
        if self.schema is None:
            return params
        return load_params(self.schema, params)


class Call:
    """What a method needs to know about the request it serves."""

    __slots__ = ("state", "agent", "caller", "at_root")

    def __init__(self, state, agent, caller, at_root=False):
        self.state = state
        self.agent = agent
        self.caller = caller
        #: Reached as the default agent at /a2a rather than under the prefix.
        self.at_root = at_root

    @property
    def store(self):
        return self.state.store


def method(name, schema=None):
    def register(func):
        METHODS[name] = Method(name, schema, func)
        return func
    return register


def find_method(name):
    found = METHODS.get(name)
    if found is None:
        raise errors.MethodNotFound(
            "Method not found: %r. This agent answers message/send, tasks/get, "
            "tasks/cancel and agent/getAuthenticatedExtendedCard." % name,
            data={"method": name})
    return found


def _history_length(call, params):
    """The caller's historyLength, else A2A_HISTORY_LENGTH_DEFAULT."""
    asked = params.get("historyLength")
    return call.state.settings.history_length_default if asked is None else asked


@method("message/send", MESSAGE_SEND_PARAMS)
def message_send(call, params):
    message = params["message"]
    configuration = params.get("configuration") or {}
    if configuration.get("pushNotificationConfig") is not None:
        raise errors.PushNotificationNotSupported(
            "configuration.pushNotificationConfig: push notifications are not "
            "supported; poll tasks/get instead.",
            data={"field": "configuration.pushNotificationConfig"})
    call.agent.check_accepts(message, configuration.get("acceptedOutputModes"))
    owner, agent_name = call.caller.id, call.agent.name
    start = call.store.start_turn(
        owner, agent_name, message, context_id=message.get("contextId"),
        task_id=message.get("taskId"), metadata=params.get("metadata"))
    history_length = _history_length(call, configuration)
    if start.replayed:
        return call.store.get_task(start.task_id, owner, agent_name, history_length)
    # Synchronous whatever `blocking` says: the turn ends before the answer.
    outcome = run_turn(Turn(call.store, call.agent, call.caller, start.task_id,
                            start.context_id, message, start.message_seq,
                            params.get("metadata")))
    if outcome is None or not start.created:
        # Canceled meanwhile, or a task with earlier turns: read it as stored.
        return call.store.get_task(start.task_id, owner, agent_name, history_length)
    # A new task holds exactly what this turn wrote: no need to read it back.
    state, status_message, artifacts, timestamp = outcome
    return task_view(start.task_id, start.context_id, state, timestamp,
                     status_message, artifacts,
                     clamp_history([start.message, status_message], history_length),
                     params.get("metadata"))


@method("tasks/get", TASK_QUERY_PARAMS)
def tasks_get(call, params):
    return call.store.get_task(params["id"], call.caller.id, call.agent.name,
                               _history_length(call, params))


@method("tasks/cancel", TASK_ID_PARAMS)
def tasks_cancel(call, params):
    call.store.cancel_task(params["id"], call.caller.id, call.agent.name)
    return call.store.get_task(params["id"], call.caller.id, call.agent.name)


@method("agent/getAuthenticatedExtendedCard")
def get_extended_card(call, params):
    if not call.agent.has_extended_card:
        raise errors.AuthenticatedExtendedCardNotConfigured(
            "Agent %s has no authenticated extended card; its public card is "
            "all there is." % call.agent.name)
    if not call.caller.authenticated:
        raise errors.AuthenticatedExtendedCardNotConfigured(
            "The extended card of agent %s is shown only to authenticated "
            "callers, and authentication is off here." % call.agent.name)
    return agent_card(call.state, call.agent, call.at_root, extended=True)


def _unsupported(error_class, text):
    def handler(call, params):
        raise error_class(text)
    return handler


method("message/stream")(_unsupported(
    errors.UnsupportedOperation,
    "This operation is not supported: streaming is not available from this agent; "
    "use message/send, then tasks/get."))
method("tasks/resubscribe")(_unsupported(
    errors.UnsupportedOperation,
    "This operation is not supported: there is no stream to resubscribe to; "
    "poll tasks/get."))
for _name in ("set", "get", "list", "delete"):
    method("tasks/pushNotificationConfig/" + _name)(_unsupported(
        errors.PushNotificationNotSupported,
        "Push notifications are not supported by this agent: poll tasks/get."))
