"""Chaos run: the nine findings of "leave it running unattended", each
reproduced against real gunicorn servers, one figure line per finding.

    python bench/chaos.py              # all findings, about 2-3 minutes
    python bench/chaos.py --only 5,8   # some of them

Findings 0-9 are in bench/chaos_unattended.py, 10-16 (a hostile caller's) in
bench/chaos_hostile.py, C1 (the client against a hostile server) in
bench/chaos_client.py, M1 (concurrent ListTasks, memory per process) in
bench/chaos_memory.py, Q1, P1, I1 and B1 (one key filling the disk, a
PostgreSQL crash mid-turn, long ids, Basic with new names) in
bench/chaos_issue32.py, what they share in bench/chaos_harness.py.
CHAOS_PORTS=9500-9599 keeps every server of the run in that port range.

Runs ``gunicorn wsgi:app`` of the checkout this file is in, with the Python
environment running it, on 127.0.0.1 only; each server has a fresh temporary
database and its own process group, killed when its finding ends. Every load
is bounded in time and count. Some findings need root (chattr +i, a small
tmpfs for a full disk), nginx or PostgreSQL's server binaries; without them they say "skipped" and why.
"""

import argparse
import subprocess

from chaos_client import FINDINGS as CLIENT
from chaos_harness import REPO
from chaos_hostile import FINDINGS as HOSTILE
from chaos_issue32 import FINDINGS as ISSUE32
from chaos_memory import FINDINGS as MEMORY
from chaos_unattended import FINDINGS as UNATTENDED


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated finding numbers, e.g. 1,5")
    args = parser.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    print("chaos run of %s (%s)" % (REPO, subprocess.run(
        ["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True,
        text=True).stdout.strip() or "no git"))
    print("| # | finding | figure |\n|---|---|---|")
    for number, name, run in UNATTENDED + HOSTILE + CLIENT + MEMORY + ISSUE32:
        if only and number not in only:
            continue
        try:
            figure = run()
        except Exception as exc:  # one finding's failure does not stop the run
            figure = "could not run: %s: %s" % (type(exc).__name__, exc)
        print("| %s | %s | %s |" % (number, name, figure), flush=True)


if __name__ == "__main__":
    main()
