"""Calling an agent from a terminal: what ``python -m a2a_flask.client``
and ``flask a2a call`` share (the call, what it prints, its exit status).

Needs no Flask app and no extra: without urllib3 the client's transport is
the standard library's (``stdlib_transport``).
"""

import argparse
import json
import sys
from typing import List, Optional, Union

from ..errors import A2AError
from .errors import ClientError
from .shapes import Message, Task

#: Task states that make a call exit with status 1.
UNSUCCESSFUL = ("failed", "rejected", "canceled")
#: The longest ``--wait`` by default, in seconds.
WAIT_TIMEOUT = 300.0
#: What ``--help`` says of each option (``flask a2a call`` says the same).
HELP = {
    "key": "API key, sent where the agent's card says (its apiKey header, "
           "else as a bearer token).",
    "key_stdin": "Read the API key from the first line of standard input "
                 "(keeps it out of the shell history and process list).",
    "token": "Bearer token.",
    "wait": "Poll the task until it is done or waits for input.",
    "timeout": "Longest --wait, in seconds.",
    "task_id": "Continue this task (one waiting for input).",
    "context_id": "Join this conversation.",
    "version": "Protocol version (default: the card's first).",
    "binding": "Binding (default: the card's first).",
    "json": "Print the answer as JSON (the wire form) instead.",
}
DESCRIPTION = ("Send TEXT to the A2A agent at URL (its card URL, the URL the "
               "card is below, or its endpoint) and print the task's state and "
               "reply. Exit status 1 when the task failed, was rejected or "
               "canceled, or the call failed (the error's code and sentence on "
               "stderr).")


class CallFailed(Exception):
    """The call got no task or message: the error's type and sentence."""


def call(url: str, text: str, key: Optional[str] = None, token: Optional[str] = None,
         wait: bool = False, timeout: float = WAIT_TIMEOUT,
         task_id: Optional[str] = None, context_id: Optional[str] = None,
         version: Optional[str] = None,
         binding: Optional[str] = None) -> Union[Task, Message]:
    """Send ``text`` to the agent at ``url``; its answer, or ``CallFailed``."""
    from .client import Client

    try:
        with Client(url, key=key, token=token, version=version,
                    binding=binding) as agent:
            return agent.send(text, task_id=task_id, context_id=context_id,
                              wait=timeout if wait else False)
    except (A2AError, ClientError) as exc:
        raise CallFailed("%s: %s" % (type(exc).__name__, exc)) from None


def printed(result: Union[Task, Message], as_json: bool = False) -> str:
    """What a terminal shows of ``result``: the state, ids and reply (or the
    wire form), without the last newline."""
    state = getattr(result, "state", None)
    if as_json:
        return json.dumps(result.raw, indent=2, ensure_ascii=False)
    if state is None or isinstance(result, Message):  # isinstance tells mypy; getattr does not
        return "message\n" + result.text
    lines = ["%s  task %s  context %s" % (state, result.id, result.context_id)]
    if result.text:
        lines.append(result.text)
    return "\n".join(lines)


def exit_status(result: Union[Task, Message]) -> int:
    return 1 if getattr(result, "state", None) in UNSUCCESSFUL else 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m a2a_flask.client",
                                     description=DESCRIPTION)
    parser.add_argument("url", metavar="URL")
    parser.add_argument("text", metavar="TEXT")
    parser.add_argument("--key", help=HELP["key"])
    parser.add_argument("--key-stdin", action="store_true", help=HELP["key_stdin"])
    parser.add_argument("--token", help=HELP["token"])
    parser.add_argument("--wait", action="store_true", help=HELP["wait"])
    parser.add_argument("--timeout", type=_seconds, default=WAIT_TIMEOUT,
                        help=HELP["timeout"] + " (default: %(default)s)")
    parser.add_argument("--task-id", help=HELP["task_id"])
    parser.add_argument("--context-id", help=HELP["context_id"])
    parser.add_argument("--version", choices=["1.0", "0.3"], help=HELP["version"])
    parser.add_argument("--binding", choices=["JSONRPC", "HTTP+JSON"],
                        help=HELP["binding"])
    parser.add_argument("--json", dest="as_json", action="store_true",
                        help=HELP["json"])
    return parser


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:  # also NaN
        raise argparse.ArgumentTypeError("%r is not a number of seconds >= 0" % value)
    return seconds


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m a2a_flask.client URL TEXT [options]``: the exit status."""
    args = _parser().parse_args(argv)
    key = args.key
    if args.key_stdin:
        key = sys.stdin.readline().strip() or None
    try:
        result = call(args.url, args.text, key=key, token=args.token, wait=args.wait,
                      timeout=args.timeout, task_id=args.task_id,
                      context_id=args.context_id, version=args.version,
                      binding=args.binding)
    except CallFailed as exc:
        print("Error: %s" % exc, file=sys.stderr)
        return 1
    print(printed(result, args.as_json))
    return exit_status(result)
