"""``flask a2a call``: try any A2A agent from a terminal."""

import json
import sys

import click

#: Task states that make ``call`` exit with status 1.
UNSUCCESSFUL = ("failed", "rejected", "canceled")


@click.command("call")
@click.argument("url")
@click.argument("text")
@click.option("--key", default=None,
              help="API key, sent where the agent's card says (its apiKey "
                   "header, else as a bearer token).")
@click.option("--key-stdin", is_flag=True,
              help="Read the API key from the first line of standard input "
                   "(keeps it out of the shell history and process list).")
@click.option("--token", default=None, help="Bearer token.")
@click.option("--wait", is_flag=True,
              help="Poll the task until it is done or waits for input.")
@click.option("--timeout", type=click.FloatRange(0), default=300.0,
              show_default=True, help="Longest --wait, in seconds.")
@click.option("--task-id", default=None,
              help="Continue this task (one waiting for input).")
@click.option("--context-id", default=None, help="Join this conversation.")
@click.option("--version", "version", type=click.Choice(["1.0", "0.3"]),
              default=None, help="Protocol version (default: the card's first).")
@click.option("--binding", type=click.Choice(["JSONRPC", "HTTP+JSON"]),
              default=None, help="Binding (default: the card's first).")
@click.option("--json", "as_json", is_flag=True,
              help="Print the answer as JSON (the wire form) instead.")
def call(url, text, key, key_stdin, token, wait, timeout, task_id, context_id, version,
         binding, as_json):
    """Send TEXT to the A2A agent at URL (its card URL, the URL the card is
    below, or its endpoint) and print the task's state and reply.

    Exit status 1 when the task failed, was rejected or canceled, or the
    call failed (the error's code and sentence on stderr)."""
    if key_stdin:
        key = sys.stdin.readline().strip() or None
    try:
        from ..client import ClientError
        from ..client.client import Client
    except ImportError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        with Client(url, key=key, token=token, version=version,
                    binding=binding) as agent:
            result = agent.send(text, task_id=task_id, context_id=context_id,
                                wait=timeout if wait else False)
    except ClientError as exc:
        raise click.ClickException("%s: %s" % (type(exc).__name__, exc)) from None
    state = getattr(result, "state", None)
    if as_json:
        click.echo(json.dumps(result.raw, indent=2, ensure_ascii=False))
    elif state is None:
        click.echo("message")
        click.echo(result.text)
    else:
        click.echo("%s  task %s  context %s" % (state, result.id, result.context_id))
        if result.text:
            click.echo(result.text)
    if state in UNSUCCESSFUL:
        raise SystemExit(1)
