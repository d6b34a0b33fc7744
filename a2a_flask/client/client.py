"""``Client``: a synchronous A2A client for one agent.

It reads the agent's card once (from any URL form, see ``cards``), calls
the first interface of the card it speaks, and retries what is safe:

- a request that never reached the agent (no connection), always;
- a lost answer (read timeout, dropped connection) or an HTTP 5xx, for
  reads and cancels, and for a send only when the card declares
  ``cards.MESSAGE_ID_ONCE`` (the same ``messageId`` is sent each time, so
  the agent runs the message once); elsewhere a send whose outcome is
  unknown raises ``AmbiguousOutcome`` carrying its ``messageId``;
- HTTP 429, after its ``Retry-After``.

What the far side can make it do is bounded: ``timeout`` is the whole
call (connect to last byte, retries included), an answer over
``max_answer_bytes`` is dropped unread (``AnswerTooLarge``), an answer that
is not A2A (bad JSON, any depth of nesting, wrong shapes) raises
``TransportError``, and credentials go only to the origin the card came
from (or one the caller allows): a card naming another is refused
(``CardError``) rather than called without them, so that nothing of the
caller's reaches an origin it did not choose.

One client holds one connection pool and no other shared state than its
card and credentials (each behind a lock): share it between threads.
"""

import math
import random
import secrets
import threading
import time
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple, Union

from ..protocol.v10 import convert as convert_v10
from . import cards, protocols, shapes
from .cards import MALFORMED
from .auth import Auth, auth_from
from .errors import (
    AmbiguousOutcome, CardError, TokenError, TransportError, WaitTimeout,
)
from .protocols import Call, SendOptions
from .shapes import Message, Task, TaskPage
from .transport import MAX_ANSWER_BYTES, Answer, Http, Lost, NotSent

JSONObject = Dict[str, Any]
#: Reads and cancels: sending them again changes nothing.
_REPLAYABLE = frozenset({"get", "list", "cancel", "extended_card"})


class Client:
    """A synchronous A2A client of the agent at ``url``.

    ``url``: the card's URL, a URL the card is below, or an endpoint the
    card lists. ``card``: the card itself (no fetch). Credentials: ``key``
    (an API key: in the header the card's ``apiKey`` scheme names, else as
    a bearer token), ``token`` (bearer), ``basic`` (user, password) or
    ``auth`` (an ``Auth``, e.g. ``ClientCredentials``). ``version`` ("1.0",
    "0.3") and ``binding`` ("JSONRPC", "HTTP+JSON") restrict the interface
    chosen; by default the card's preferred one this client speaks.
    ``verify_card``: check the card's signature (needs the ``jose`` extra);
    ``card_keys``: the trusted public keys (a JWKS dict, or ``{kid: key}``),
    else the keys of the signature's ``jku`` on the card's own host.

    Timeouts in seconds: ``connect_timeout``, ``timeout`` (a whole call,
    connect to last byte, its retries included), ``wait_timeout`` (how long
    ``wait`` polls by default). ``max_answer_bytes``: the largest answer
    body read (``AnswerTooLarge`` past it). ``allow_origins``: origins
    (``"https://host[:port]"``) besides the card's own that may receive
    the credentials (and ``headers``); a card naming another is refused.
    ``retries``: how many times a safe request is sent again, after
    ``backoff`` doubling up to ``max_backoff`` (with jitter). ``tracing``:
    send W3C ``traceparent`` (None: when OpenTelemetry is installed and a
    span is current; True: also a new trace per call without it).
    ``headers``: sent with every request.
    """

    def __init__(self, url: Optional[str] = None, *, card: Optional[JSONObject] = None,
                 key: Optional[str] = None, token: Optional[str] = None,
                 basic: Optional[Tuple[str, str]] = None, auth: Optional[Auth] = None,
                 version: Optional[str] = None, binding: Optional[str] = None,
                 verify_card: bool = False, card_keys: Any = None,
                 connect_timeout: float = 5.0, timeout: float = 60.0,
                 wait_timeout: float = 300.0, retries: int = 3,
                 backoff: float = 0.25, max_backoff: float = 5.0,
                 tracing: Optional[bool] = None,
                 headers: Optional[Dict[str, str]] = None, verify_tls: bool = True,
                 ca_certs: Optional[str] = None, pool_size: int = 10,
                 max_answer_bytes: int = MAX_ANSWER_BYTES,
                 allow_origins: Optional[Iterable[str]] = None) -> None:
        if url is None and card is None:
            raise ValueError("give the agent's url or its card")
        self.url = url
        self.http = Http(connect_timeout, timeout, verify_tls, ca_certs, pool_size,
                         max_answer_bytes)
        self.allow_origins = frozenset(cards.origin(o) for o in allow_origins or ())
        #: The origin the card came from; None: a card given without a URL
        #: (the caller's own choice of where to call).
        self._home: Optional[cards.Origin] = cards.origin(url) if url else None
        self._given_auth = auth_from(key, token, basic, auth)
        #: A token endpoint the caller named is trusted; one the card names
        #: is checked like any other origin.
        self._token_url_given = getattr(self._given_auth, "token_url", "") is not None
        self._auth: Auth = self._given_auth
        self.version, self.binding = version, binding
        self.verify_card = verify_card or card_keys is not None
        self.card_keys = card_keys
        self.wait_timeout = wait_timeout
        self.retries, self.backoff, self.max_backoff = retries, backoff, max_backoff
        self.tracing = tracing
        self.headers = dict(headers or {})
        self._lock = threading.Lock()
        self._card: Optional[JSONObject] = None
        self._given_card = card
        self._protocol: Any = None
        self._send_replayable = False

    # -- the card ---------------------------------------------------------

    @property
    def card(self) -> JSONObject:
        """The agent's card (fetched on first use, then kept)."""
        return self._ready()[0]

    @property
    def interface(self) -> cards.Interface:
        """The interface this client calls (version, binding, URL)."""
        return self._ready()[1].interface

    def _ready(self, deadline: Optional[float] = None) -> Tuple[JSONObject, Any]:
        with self._lock:
            if self._card is None:
                if deadline is None:
                    deadline = self.http.deadline()
                card, card_url = self._given_card, self.url
                if card is None:
                    card, card_url = self._fetch_card(deadline)
                try:
                    self._card, self._protocol = self._take_card(card, card_url)
                except MALFORMED as exc:
                    raise CardError("The card of %s is malformed (%s: %s)." % (
                        card_url or "given", type(exc).__name__, exc)) from exc
            return self._card, self._protocol

    def _take_card(self, card: JSONObject,
                   card_url: Optional[str]) -> Tuple[JSONObject, Any]:
        if self.verify_card:
            from .signing import verify_card
            verify_card(card, self.card_keys, self.http, card_url)
        protocol = protocols.for_interface(cards.choose(
            card, self.version, self.binding, signed_only=self.verify_card))
        self._check_origin(protocol.interface.url, "its interface")
        auth = self._given_auth.for_card(card, self.http)
        token_url = getattr(auth, "token_url", None)
        if not self._token_url_given and token_url:
            try:
                self._check_origin(token_url, "its token endpoint")
            except CardError:
                # for_card kept it on the caller's Auth: dropped, so that no
                # later call (nor a card fetch's retry) sends the secret there.
                auth.token_url = None  # type: ignore[attr-defined]
                raise
        self._auth = auth
        self._send_replayable = cards.runs_message_id_once(card)
        return card, protocol

    def _has_credentials(self) -> bool:
        return type(self._given_auth) is not Auth or bool(self.headers)

    def _check_origin(self, url: str, what: str = "the call") -> None:
        """Refuse to send credentials to an origin other than the card's own
        (or one the caller allowed), as a browser keeps them to their origin."""
        if self._home is None or not self._has_credentials():
            return
        there = cards.origin(url)
        if there != self._home and there not in self.allow_origins:
            raise CardError(
                "The card names %s for %s, not on the origin it came from "
                "(%s://%s:%d); the client sends its credentials only there. "
                "Give allow_origins=[%r] to trust it." % (
                    url, what, self._home[0], self._home[1], self._home[2],
                    "%s://%s:%d" % there))

    def _fetch_card(self, deadline: float) -> Tuple[JSONObject, str]:
        assert self.url is not None
        return cards.find_card(self.url, lambda card_url: self._get_card(card_url, deadline))

    def _get_card(self, card_url: str, deadline: float) -> Answer:
        # The newest version's card: a server that serves a card per version
        # (the JS SDK's legacy switch) lists every interface in that one.
        headers = {protocols.VERSION_HEADER: "1.0"}
        answer = self._request(Call("card", "GET", card_url, headers=headers),
                               replayable=True, deadline=deadline)
        if answer.status in (401, 403) and type(self._given_auth) is not Auth:
            try:  # a service whose cards need credentials (A2A_PUBLIC_CARDS off)
                headers.update(self._given_auth.headers(self.http))
                answer = self._request(Call("card", "GET", card_url, headers=headers),
                                       replayable=True, deadline=deadline)
            except TokenError:
                pass
        return answer

    # -- operations -------------------------------------------------------

    def send(self, text: Optional[str] = None, *,
             parts: Optional[List[JSONObject]] = None,
             task_id: Optional[str] = None, context_id: Optional[str] = None,
             message_id: Optional[str] = None,
             message_metadata: Optional[JSONObject] = None,
             metadata: Optional[JSONObject] = None, blocking: bool = True,
             history_length: Optional[int] = None,
             accepted_output_modes: Optional[List[str]] = None,
             wait: Union[bool, float] = False) -> Union[Task, Message]:
        """Send a user message (``text``, or 0.3-form ``parts``); the Task (or
        the Message an agent answered without a task).

        ``task_id`` continues a task waiting for input; ``context_id`` joins a
        conversation; ``message_id`` (default: a new one) is kept across the
        client's own retries. ``blocking=False`` asks the agent to answer at
        once. ``wait``: poll the task until it is done or waits for input
        (True: up to ``wait_timeout``; a number: that many seconds), raising
        ``WaitTimeout`` past that.
        """
        message = shapes.user_message(text, parts, message_id, task_id, context_id,
                                      message_metadata)
        options = SendOptions(blocking, history_length, accepted_output_modes, metadata)
        result = self._operation(lambda p: p.send(message, options),
                                 shapes.send_result, message["messageId"])
        if wait and isinstance(result, Task):
            return self.wait(result, None if wait is True else float(wait))
        return result

    def get(self, task_id: str, history_length: Optional[int] = None) -> Task:
        """The task as it stands (``history_length``: at most that many
        messages of its history)."""
        return self._operation(lambda p: p.get(task_id, history_length), shapes.task)

    def list_tasks(self, context_id: Optional[str] = None, state: Optional[str] = None,
                   page_size: Optional[int] = None, page_token: Optional[str] = None,
                   history_length: Optional[int] = None,
                   include_artifacts: Optional[bool] = None) -> TaskPage:
        """One page of the caller's tasks (A2A 1.0 only; ``state`` as 0.3
        spells it, e.g. ``"working"``)."""
        query: JSONObject = {}
        for name, value in (("contextId", context_id), ("pageSize", page_size),
                            ("pageToken", page_token), ("historyLength", history_length),
                            ("includeArtifacts", include_artifacts)):
            if value is not None:
                query[name] = value
        if state is not None:
            query["status"] = convert_v10.state(state)
        return self._operation(lambda p: p.list(query), shapes.task_page)

    def cancel(self, task_id: str) -> Task:
        """Cancel the task; the canceled task."""
        return self._operation(lambda p: p.cancel(task_id), shapes.task)

    def extended_card(self) -> JSONObject:
        """The authenticated extended card."""
        return self._operation(lambda p: p.extended_card(), _card_object)

    def wait(self, task: Union[Task, str], timeout: Optional[float] = None,
             interval: float = 0.1, max_interval: float = 2.0) -> Task:
        """Poll the task until it is done or waits for the caller, with
        backoff from ``interval`` to ``max_interval``; ``WaitTimeout``
        (carrying the last task seen) after ``timeout`` (default
        ``wait_timeout``) seconds."""
        current = task if isinstance(task, Task) else self.get(task)
        deadline = time.monotonic() + (self.wait_timeout if timeout is None else timeout)
        while not (current.done or current.interrupted):
            left = deadline - time.monotonic()
            if left <= 0:
                raise WaitTimeout("Task %s is still %s after the wait."
                                  % (current.id, current.state), current)
            time.sleep(min(interval, left))
            interval = min(interval * 1.5, max_interval)
            current = self.get(current.id)
        return current

    def close(self) -> None:
        """Close the pooled connections."""
        self.http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # -- one operation, with its retries ------------------------------------

    def _operation(self, build: Callable[[Any], Call], read: Callable[[Any], Any],
                   message_id: Optional[str] = None) -> Any:
        deadline = self.http.deadline()  # the whole call: card, retries, answer
        protocol = self._ready(deadline)[1]
        call = build(protocol)
        replayable = call.operation in _REPLAYABLE or self._send_replayable
        answer = self._request(call, replayable, message_id, deadline)
        try:
            return read(protocol.result(call, answer))
        except MALFORMED as exc:
            raise TransportError("Not an A2A answer from %s (HTTP %d; %s: %s)" % (
                call.url, answer.status, type(exc).__name__, str(exc)[:200]),
                answer.status) from exc

    def _request(self, call: Call, replayable: bool,
                 message_id: Optional[str] = None,
                 deadline: Optional[float] = None) -> Answer:
        if deadline is None:
            deadline = self.http.deadline()
        if call.operation != "card":
            self._check_origin(call.url)
        trace = self._trace_headers()
        attempt, auth_renewed = 0, False
        while True:
            headers = dict(self.headers)
            headers.update(call.headers)
            if call.operation != "card":
                headers.update(self._auth.headers(self.http))
            headers.update(trace)
            try:
                answer = self.http.request(call.method, call.url, call.body, headers,
                                           deadline)
            except NotSent as exc:
                if self._again(attempt, deadline):
                    attempt += 1
                    continue
                raise TransportError(str(exc)) from exc
            except Lost as exc:
                if replayable and self._again(attempt, deadline):
                    attempt += 1
                    continue
                if message_id is not None and not replayable:
                    raise AmbiguousOutcome(
                        "%s; the agent may or may not have run message %s, and it "
                        "does not declare that a retry runs it once." % (exc, message_id),
                        message_id) from exc
                raise TransportError(str(exc)) from exc
            if answer.status == 401 and not auth_renewed and call.operation != "card" \
                    and self._auth.refused():
                auth_renewed = True
                continue
            if answer.status == 429 and self._again(attempt, deadline,
                                                    _retry_after(answer)):
                attempt += 1
                continue
            if answer.status >= 500:
                if replayable and self._again(attempt, deadline):
                    attempt += 1
                    continue
                if message_id is not None and not replayable and not _a2a_error(answer):
                    raise AmbiguousOutcome(
                        "HTTP %d from %s; the agent may or may not have run message "
                        "%s." % (answer.status, call.url, message_id), message_id,
                        answer.status)
            return answer

    def _again(self, attempt: int, deadline: float,
               delay: Optional[float] = None) -> bool:
        """Sleep before attempt ``attempt + 1``; False when none is left, or
        when the call's deadline would pass before it starts."""
        if attempt >= self.retries:
            return False
        if delay is None:
            delay = min(self.max_backoff, self.backoff * 2 ** attempt)
            delay *= random.uniform(0.5, 1.0)
        delay = min(delay, self.max_backoff * 4)
        if time.monotonic() + delay >= deadline:
            return False
        time.sleep(delay)
        return True

    def _trace_headers(self) -> Dict[str, str]:
        if self.tracing is False:
            return {}
        carrier: Dict[str, str] = {}
        try:
            from opentelemetry import propagate
        except ImportError:
            pass
        else:
            propagate.inject(carrier)
        if self.tracing and "traceparent" not in carrier:
            carrier["traceparent"] = "00-%s-%s-01" % (secrets.token_hex(16),
                                                      secrets.token_hex(8))
        return carrier

    def __repr__(self) -> str:
        return "Client(%r)" % (self.url or (self._given_card or {}).get("name"))


def _retry_after(answer: Answer) -> Optional[float]:
    value = answer.headers.get("Retry-After")
    try:
        delay = float(value) if value is not None else None
    except ValueError:
        return None
    # NaN would reach time.sleep (a ValueError): the far side chooses it.
    return max(delay, 0.0) if delay is not None and math.isfinite(delay) else None


def _card_object(result: Any) -> JSONObject:
    if not isinstance(result, dict):
        raise TypeError("the extended card is not an object")
    return result


def _a2a_error(answer: Answer) -> bool:
    """Whether a 5xx answer is an A2A error the agent worded (a definite
    outcome), not a proxy's page."""
    body = answer.json()
    return isinstance(body, dict) and isinstance(body.get("error"), dict)
