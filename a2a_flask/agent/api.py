"""What an agent is to its author: a function of a ``Turn``.

The function returns a reply (a string or ``Reply``), asks for more input
(``InputRequired`` / ``AuthRequired``) or refuses (``Reject``); an exception
fails the task. ``agent/engine.py`` calls it with no transaction open and
stores the outcome.
"""

from typing import TYPE_CHECKING, Any, Callable, Iterable, List, Mapping, Optional

from ..messages import JSONObject, agent_message, text_part
from .output import AGENT_ARTIFACT, AGENT_PARTS, load_agent_output

if TYPE_CHECKING:  # pragma: no cover
    from ..auth.callers import Caller
    from ..storage.base import Storage
    from .registry import Agent


def _text_parts(text: Optional[str],
                parts: Optional[Iterable[JSONObject]]) -> List[JSONObject]:
    if parts is not None:
        # Checked here, in the agent's own call: a bad part fails the task
        # with a log line naming it, instead of an answer that breaks the schema.
        return load_agent_output(AGENT_PARTS, {"parts": list(parts)}, "parts")["parts"]
    return [{"kind": "text", "text": "" if text is None else str(text)}]


class Reply:
    """The agent's answer: the task is ``completed``.

    ``text`` or ``parts`` (A2A part objects) make the reply message and the
    artifact named ``response``; ``artifacts`` adds more, each a dict with
    ``parts`` and optionally ``name``, ``description``, ``metadata``.
    """

    state = "completed"

    def __init__(self, text: Optional[str] = None,
                 parts: Optional[Iterable[JSONObject]] = None,
                 artifacts: Iterable[Mapping[str, Any]] = (),
                 metadata: Optional[JSONObject] = None) -> None:
        self.parts = _text_parts(text, parts)
        self.artifacts = [load_agent_output(AGENT_ARTIFACT, dict(spec), "artifact")
                          for spec in artifacts]
        self.metadata = metadata


class _StatusReply:
    """A message that becomes the task's status message, without an artifact."""

    state: Optional[str] = None

    def __init__(self, text: Optional[str] = None,
                 parts: Optional[Iterable[JSONObject]] = None,
                 metadata: Optional[JSONObject] = None) -> None:
        self.parts = _text_parts(text, parts)
        self.metadata = metadata


class InputRequired(_StatusReply):
    """The agent asks a question: the task waits (``input-required``)."""

    state = "input-required"


class AuthRequired(_StatusReply):
    """The agent needs the caller to authorize something (``auth-required``)."""

    state = "auth-required"


class Reject(_StatusReply):
    """The agent refuses the task (``rejected``); the text says why."""

    state = "rejected"


class Turn:
    """One incoming message, as the agent function sees it."""

    def __init__(self, store: "Storage", agent: "Agent", caller: "Caller", task_id: str,
                 context_id: str, message: JSONObject, message_seq: Optional[int],
                 metadata: Optional[JSONObject] = None, tenant: str = "") -> None:
        self._store = store
        #: The tenant the message was sent in ('' for none: A2A_TENANTS).
        self.tenant = tenant
        self.agent = agent
        #: Who sent it (``Caller``: ``id``, ``kind``, ``name``).
        self.caller = caller
        self.task_id = task_id
        self.context_id = context_id
        #: The whole incoming message (a dict), file and data parts too.
        self.message = message
        self.metadata = metadata or {}
        self._seq = message_seq
        self._history: Optional[List[JSONObject]] = None
        self._context_history: Optional[List[JSONObject]] = None
        #: A2A_MAX_TURN_OUTPUT_BYTES, set by ``run_turn``.
        self.max_output_bytes: Optional[int] = None
        #: What the task's artifacts may count together, set by ``run_turn``.
        self.max_artifact_bytes: Optional[int] = None
        self._calls = 0
        #: What ``call`` runs, given by ``run_turn``: the client lives in a
        #: higher layer (it speaks the wire), so the app hands it down.
        self._call_agent: Optional[Callable[..., Any]] = None
        #: The storage failure one of this turn's reads met (None: none):
        #: the turn ends as that outage, whatever the agent made of it.
        self._storage_failure: Optional[Exception] = None
        #: What ``start_turn`` returned for a turn run in a request, which
        #: its outcome's write needs should the start have been lost.
        self._start: Any = None

    @property
    def parts(self) -> List[JSONObject]:
        return self.message["parts"]

    @property
    def text(self) -> str:
        """The text parts, in order, joined with a newline."""
        return "\n".join(p["text"] for p in self.parts if p["kind"] == "text")

    @property
    def files(self) -> List[JSONObject]:
        return [p["file"] for p in self.parts if p["kind"] == "file"]

    @property
    def data(self) -> List[Any]:
        return [p["data"] for p in self.parts if p["kind"] == "data"]

    def _stored(self, read: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``read(*args, **kwargs)`` of the storage; then this thread's
        connection goes back to the pool (no transaction is open while an
        agent runs): the agent may now wait seconds on a model, and a
        process's connections are bounded."""
        try:
            return read(*args, **kwargs)
        except Exception as exc:
            failure = self._store.failure(exc)
            if failure is None:
                raise
            self._storage_failure = failure
            raise failure from None
        finally:
            self._store.release_connection()

    @property
    def history(self) -> List[JSONObject]:
        """Earlier messages of this task, oldest first (read on first use)."""
        if self._history is None:
            self._history = self._stored(self._store.task_history, self.task_id,
                                         before_seq=self._message_seq())
        return self._history

    def _message_seq(self) -> int:
        """This message's seq: the bound of the history its turn reads, and
        the name of its remote calls (``client/calls.py``). Found on first
        use when the start did not read it (``TurnStart.message_seq``); 0,
        no history, once its task is deleted."""
        if self._seq is None:
            self._seq = self._stored(self._store.message_seq, self.task_id,
                                     self.message["messageId"],
                                     self.message["role"]) or 0
        return self._seq

    @property
    def context_history(self) -> List[JSONObject]:
        """Earlier messages of the whole conversation (all its tasks)."""
        if self._context_history is None:
            self._context_history = self._stored(
                self._store.context_history, self.caller.id, self.agent.name,
                self.context_id, before_seq=self._message_seq(), tenant=self.tenant)
        return self._context_history

    def recent(self, count: int) -> List[JSONObject]:
        """The last ``count`` earlier messages of the conversation, oldest
        first: what a long conversation costs is ``count``, not its length."""
        if count <= 0:
            return []
        if self._context_history is not None:
            return self._context_history[-count:]
        return self._stored(self._store.context_history, self.caller.id,
                            self.agent.name, self.context_id, before_seq=self._message_seq(),
                            limit=count, tenant=self.tenant)

    @property
    def canceled(self) -> bool:
        """True once the task was canceled: stop early, the result is discarded."""
        return self._stored(self._store.task_state, self.task_id) == "canceled"

    def call(self, agent: Any, text: Optional[str] = None, **options: Any) -> Any:
        """Send ``text`` to another A2A agent and wait for its task to be done
        or to wait for input; the ``Task`` (``a2a_flask.client``, the
        ``client`` extra). ``agent``: a ``Client`` (make one per remote agent,
        once, and share it) or a URL (``client_options`` then holds the
        Client's arguments, e.g. ``{"key": ...}``). The remote task's id is
        noted in this task's metadata: a retried turn continues it instead
        of sending again. ``key`` names the call (default: its rank in the
        turn); ``wait``: False returns after the send, a number bounds the
        wait; other options go to ``Client.send`` (``parts``,
        ``context_id``, ``metadata``...)."""
        if self._call_agent is None:
            raise RuntimeError("turn.call works in a turn that a2a_flask runs "
                               "(a request or `flask a2a worker`)")
        return self._call_agent(self, agent, text, **options)

    def progress(self, text: str) -> bool:
        """Show ``text`` as the task's status message while it is ``working``
        (``tasks/get`` sees it; it does not join the history). False once the
        task is no longer working (canceled): stop early."""
        text = str(text)
        limit = self.max_output_bytes
        if limit is not None and len(text) * 4 > limit:  # UTF-8: 4 bytes at most
            text = text[:limit // 8] + "..."  # a progress note, not an answer
        return self._stored(self._store.progress, self.task_id, agent_message(
            [text_part(text)], self.task_id, self.context_id))
