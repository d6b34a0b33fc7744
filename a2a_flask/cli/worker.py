"""``flask a2a worker``: run the turns of background agents."""

import gc

import click
from flask.cli import with_appcontext
from typing import Optional

from ..app_state import current_app_state


@click.command("worker")
@with_appcontext
@click.option("--threads", type=click.IntRange(1, 4096), default=1,
              show_default=True,
              help="Turns run at once by this process, at most: a thread is "
                   "started per claimed turn and ends with it (an idle worker "
                   "holds none). Agents that wait on a model: hundreds; "
                   "CPU-heavy agents: about the cores.")
@click.option("--agents", default=None,
              help="Only these background agents (names separated by commas); "
                   "default: every background agent.")
@click.option("--grace", type=click.FloatRange(0), default=30.0,
              show_default=True,
              help="Seconds a SIGTERM waits for running turns before releasing "
                   "them (failed, or queued again for retry=True agents).")
def worker(threads: int, agents: Optional[str], grace: float) -> None:
    """Run the turns of background agents (background=True) until SIGTERM."""
    import signal

    from ..worker import Worker

    names = None
    if agents is not None:
        names = [name.strip() for name in agents.split(",") if name.strip()]
    try:
        runner = Worker(current_app_state(), threads, names, grace)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    if not runner.agents:
        raise click.ClickException(
            "no background agent is registered: register one with "
            "@a2a.agent(..., background=True)")
    _log_to_stderr(current_app_state().settings.log_format)
    signal.signal(signal.SIGTERM, runner.stop_on_signal)
    signal.signal(signal.SIGINT, runner.stop_on_signal)
    # The app is built: what exists now lives as long as the process. Frozen,
    # it is left out of every collection, as the shipped gunicorn.conf.py does
    # in each web worker; a full one walked all of it while every turn
    # waited (docs/benchmarks.md, "Collections").
    gc.collect()
    gc.freeze()
    runner.run()


def _log_to_stderr(log_format):
    """The worker's lines (claimed, finished, expired) on stderr, in the
    A2A_LOG_FORMAT, unless the host app already routes ``a2a_flask``."""
    import logging

    from ..logs import LEVEL, log_to_stderr

    log_to_stderr(log_format)
    logging.getLogger("a2a_flask").setLevel(LEVEL)
