"""The throwaway PostgreSQL cluster of the benchmark's PostgreSQL rows.

The cluster itself is the tests' (``tests/pgcluster.py``: the machine's
server binaries, a temporary folder, a free port of 127.0.0.1, run as the
``postgres`` user when we are root); here it keeps the server's default
durability (fsync on, synchronous_commit on), since the rows measure it.
Each server under test gets its own fresh database (``create_db``), dropped
after its turn; ``stop()`` (in the run's ``finally``) stops the cluster and
removes the folder.

    python bench/postgres.py       # start one, print its URL, stop on Enter
"""

import os
import sys

from processes import ROOT, log

sys.path.insert(0, os.path.join(ROOT, "tests"))
import pgcluster  # noqa: E402

find_bindir = pgcluster.find_bindir
unavailable = pgcluster.unavailable


def Cluster(bindir=None, parent=None):
    return pgcluster.Cluster(bindir, parent=parent, log=log)


if __name__ == "__main__":
    why = unavailable()
    if why:
        raise SystemExit(why)
    cluster = Cluster().start()
    try:
        print(cluster.url())
        input("Enter stops it: ")
    finally:
        cluster.stop()
