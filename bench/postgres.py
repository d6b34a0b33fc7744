"""A throwaway PostgreSQL cluster for the benchmark's PostgreSQL rows.

Started from the machine's server binaries (Debian's ``postgresql-15``:
``/usr/lib/postgresql/15/bin/initdb`` and ``pg_ctl``; ``--pg-bindir`` or
``BENCH_PG_BINDIR`` to use others), in a temporary folder, on a free port of
127.0.0.1 only, trust authentication, the server's default durability
(fsync on, synchronous_commit on).  PostgreSQL refuses to run as root, so
when the bench runs as root the cluster belongs to the ``postgres`` user.
Each server under test gets its own fresh database (``create_db``), dropped
after its turn; ``stop()`` (in the run's ``finally``) stops the cluster and
removes the folder.

    python bench/postgres.py       # start one, print its URL, stop on Enter
"""

import glob
import os
import pwd
import shutil
import subprocess
import tempfile

from processes import HOST, free_port, log

VERSION = "15"


def find_bindir(given=None):
    """The folder with ``initdb`` and ``pg_ctl``, or None."""
    given = given or os.environ.get("BENCH_PG_BINDIR")
    candidates = [given] if given else sorted(glob.glob(f"/usr/lib/postgresql/{VERSION}/bin")) + \
        sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    if not given and shutil.which("initdb"):
        candidates.append(os.path.dirname(shutil.which("initdb")))
    for d in candidates:
        if d and all(os.access(os.path.join(d, b), os.X_OK) for b in ("initdb", "pg_ctl", "postgres")):
            return d
    return None


def unavailable(bindir=None):
    """Why the PostgreSQL rows cannot run here, or None when they can."""
    if find_bindir(bindir) is None:
        return f"no PostgreSQL server binaries (apt-get install postgresql-{VERSION}, or --pg-bindir)"
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        return "psycopg / psycopg_pool not installed (pip install -e '.[bench]')"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and no `postgres` user to own the cluster"
    return None


class Cluster:
    def __init__(self, bindir=None, parent=None):
        self.bindir = find_bindir(bindir)
        self.parent = parent
        self.port = None
        self.dir = None
        self.running = False

    def _run(self, args, timeout=120):
        kw = {}
        if os.geteuid() == 0:  # the server refuses root: run it as postgres
            kw["user"] = "postgres"
        r = subprocess.run([os.path.join(self.bindir, args[0])] + args[1:], cwd=self.dir,
                           capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL, **kw)
        if r.returncode != 0:
            raise RuntimeError(f"{args[0]} failed ({r.returncode}): {r.stdout[-1500:]} {r.stderr[-1500:]}")
        return r

    def start(self):
        self.dir = tempfile.mkdtemp(prefix="a2a-bench-pg-", dir=self.parent)
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        data = os.path.join(self.dir, "data")
        self._run(["initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8",
                   "--no-instructions", "--no-sync"])
        self.port = free_port()
        opts = (f"-p {self.port} -c listen_addresses={HOST} -c unix_socket_directories={self.dir}"
                " -c max_connections=200")
        self._run(["pg_ctl", "-D", data, "-o", opts, "-l", os.path.join(self.dir, "server.log"),
                   "-w", "-t", "60", "start"])
        self.running = True
        version = self.query("SELECT current_setting('server_version')")
        log(f"postgres: PostgreSQL {version} on {HOST}:{self.port} (throwaway cluster in {self.dir})")
        return self

    def postmaster_pid(self):
        with open(os.path.join(self.dir, "data", "postmaster.pid")) as f:
            return int(f.readline())

    def url(self, db="postgres"):
        return f"postgresql://postgres@{HOST}:{self.port}/{db}"

    def query(self, sql, db="postgres"):
        import psycopg

        with psycopg.connect(self.url(db), autocommit=True) as c:
            cur = c.execute(sql)
            return cur.fetchone()[0] if cur.description else None

    def create_db(self, name):
        """A fresh, empty database; returns its URL."""
        self.query(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.query(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def drop_db(self, name):
        self.query(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self):
        if self.running:
            data = os.path.join(self.dir, "data")
            for mode in ("fast", "immediate"):  # fast: clean; immediate: when fast hung
                try:
                    self._run(["pg_ctl", "-D", data, "-m", mode, "-w", "-t", "30", "stop"], timeout=60)
                    break
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    if "Is server running?" in str(e):
                        break  # already gone (Ctrl-C reaches the server too)
                    log(f"postgres: {mode} stop failed: {e}")
            self.running = False
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


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
