"""``flask a2a call``: try any A2A agent from a terminal (the command of
``python -m a2a_flask.client``, ``client/terminal.py``, inside an app's CLI)."""

import sys

import click

from ..client import terminal

_HELP = terminal.HELP


@click.command("call", help=terminal.DESCRIPTION)
@click.argument("url")
@click.argument("text")
@click.option("--key", default=None, help=_HELP["key"])
@click.option("--key-stdin", is_flag=True, help=_HELP["key_stdin"])
@click.option("--token", default=None, help=_HELP["token"])
@click.option("--wait", is_flag=True, help=_HELP["wait"])
@click.option("--timeout", type=click.FloatRange(0), default=terminal.WAIT_TIMEOUT,
              show_default=True, help=_HELP["timeout"])
@click.option("--task-id", default=None, help=_HELP["task_id"])
@click.option("--context-id", default=None, help=_HELP["context_id"])
@click.option("--version", "version", type=click.Choice(["1.0", "0.3"]),
              default=None, help=_HELP["version"])
@click.option("--binding", type=click.Choice(["JSONRPC", "HTTP+JSON"]),
              default=None, help=_HELP["binding"])
@click.option("--json", "as_json", is_flag=True, help=_HELP["json"])
def call(url, text, key, key_stdin, token, wait, timeout, task_id, context_id, version,
         binding, as_json):
    if key_stdin:
        key = sys.stdin.readline().strip() or None
    try:
        result = terminal.call(url, text, key=key, token=token, wait=wait,
                               timeout=timeout, task_id=task_id, context_id=context_id,
                               version=version, binding=binding)
    except terminal.CallFailed as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(terminal.printed(result, as_json))
    status = terminal.exit_status(result)
    if status:
        raise SystemExit(status)
