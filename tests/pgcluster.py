"""A throwaway PostgreSQL cluster, for the tests and for the benchmark.

Started from the machine's server binaries (Debian's ``postgresql-15``:
``/usr/lib/postgresql/15/bin/initdb`` and ``pg_ctl``; another folder with
``bindir=`` or ``A2A_PG_BINDIR``), in a temporary folder, on a free port of
127.0.0.1 only, its unix socket in that folder, trust authentication.
PostgreSQL refuses to run as root, so when we run as root the cluster belongs
to the ``postgres`` user. ``stop()`` stops it and removes the folder; it is
also called at exit, so an interrupted run leaves nothing behind.

Plain Python (no pytest): ``tests/pgfixtures.py`` and ``bench/postgres.py``
both use it.
"""

import atexit
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import urllib.parse

VERSION = "15"
HOST = "127.0.0.1"
#: For tests only: durability off (nothing here outlives the run), faster
#: CREATE DATABASE and commits.
FAST = ("fsync=off", "synchronous_commit=off", "full_page_writes=off")

_STARTED = set()


@atexit.register
def _stop_leftovers():
    for cluster in list(_STARTED):
        cluster.stop()


def _become_postgres():
    account = pwd.getpwnam("postgres")
    os.setgroups([])
    os.setgid(account.pw_gid)
    os.setuid(account.pw_uid)


def find_bindir(given=None):
    """The folder with ``initdb``, ``pg_ctl`` and ``postgres``, or None."""
    given = given or os.environ.get("A2A_PG_BINDIR") or os.environ.get("BENCH_PG_BINDIR")
    candidates = [given] if given else (
        sorted(glob.glob("/usr/lib/postgresql/%s/bin" % VERSION))
        + sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True))
    if not given and shutil.which("initdb"):
        candidates.append(os.path.dirname(shutil.which("initdb")))
    for folder in candidates:
        if folder and all(os.access(os.path.join(folder, b), os.X_OK)
                          for b in ("initdb", "pg_ctl", "postgres")):
            return folder
    return None


def unavailable(bindir=None):
    """Why a throwaway cluster cannot run here, or None when it can."""
    if find_bindir(bindir) is None:
        return ("no PostgreSQL server binaries (apt-get install postgresql-%s, "
                "or A2A_PG_BINDIR)" % VERSION)
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        return "psycopg / psycopg_pool not installed (pip install -e '.[postgres]')"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and no `postgres` user to own the cluster"
    return None


def free_port():
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


class Cluster:
    """``Cluster().start()``; ``url(db)``, ``create_db(name)``, ``stop()``."""

    def __init__(self, bindir=None, parent=None, settings=(), log=None):
        self.bindir = find_bindir(bindir)
        self.parent = parent
        self.settings = tuple(settings)
        self.log = log or (lambda *a: None)
        self.port = None
        self.dir = None
        self.running = False

    def _run(self, args, timeout=120):
        kw = {}
        if os.geteuid() == 0:  # the server refuses root: run it as postgres
            kw["preexec_fn"] = _become_postgres  # run(user=) is Python 3.9+
        out = subprocess.run([os.path.join(self.bindir, args[0])] + args[1:], cwd=self.dir,
                             capture_output=True, text=True, timeout=timeout,
                             stdin=subprocess.DEVNULL, **kw)
        if out.returncode != 0:
            raise RuntimeError("%s failed (%d): %s %s" % (
                args[0], out.returncode, out.stdout[-1500:], out.stderr[-1500:]))
        return out

    @property
    def data(self):
        return os.path.join(self.dir, "data")

    def start(self):
        self.dir = tempfile.mkdtemp(prefix="a2a-pg-", dir=self.parent)
        _STARTED.add(self)
        try:
            if os.geteuid() == 0:
                pw = pwd.getpwnam("postgres")
                os.chown(self.dir, pw.pw_uid, pw.pw_gid)
            self._run(["initdb", "-D", self.data, "-U", "postgres", "--auth=trust",
                       "-E", "UTF8", "--no-instructions", "--no-sync"])
            self.port = free_port()
            self.resume()
            version = self.query("SELECT current_setting('server_version')")
        except BaseException:
            self.stop()
            raise
        self.log("postgres: PostgreSQL %s on %s:%d (throwaway cluster in %s)"
                 % (version, HOST, self.port, self.dir))
        return self

    def resume(self):
        """Start the server (again, after ``pause``), same port and data."""
        options = ["-p %d" % self.port, "-c listen_addresses=%s" % HOST,
                   "-c unix_socket_directories=%s" % self.dir,
                   "-c max_connections=200"] + ["-c %s" % s for s in self.settings]
        self._run(["pg_ctl", "-D", self.data, "-o", " ".join(options),
                   "-l", os.path.join(self.dir, "server.log"), "-w", "-t", "60", "start"])
        self.running = True

    def pause(self):
        """Stop the server, keeping its data (a server down, for tests)."""
        self._run(["pg_ctl", "-D", self.data, "-m", "fast", "-w", "-t", "30", "stop"])
        self.running = False

    def postmaster_pid(self):
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            return int(f.readline())

    def url(self, db="postgres"):
        return "postgresql://postgres@%s:%d/%s" % (HOST, self.port, db)

    def query(self, sql, db="postgres"):
        import psycopg

        with psycopg.connect(self.url(db), autocommit=True, connect_timeout=10) as conn:
            cur = conn.execute(sql)
            return cur.fetchone()[0] if cur.description else None

    def create_db(self, name):
        """A fresh, empty database; returns its URL."""
        self.drop_db(name)
        self.query('CREATE DATABASE "%s"' % name)
        return self.url(name)

    def drop_db(self, name):
        self.query('DROP DATABASE IF EXISTS "%s" WITH (FORCE)' % name)

    def stop(self):
        if self.running:
            for mode in ("fast", "immediate"):  # fast: clean; immediate: when fast hung
                try:
                    self._run(["pg_ctl", "-D", self.data, "-m", mode, "-w", "-t", "30",
                               "stop"], timeout=60)
                    break
                except (RuntimeError, subprocess.TimeoutExpired) as exc:
                    if "Is server running?" in str(exc):
                        break  # already gone (Ctrl-C reaches the server too)
                    self.log("postgres: %s stop failed: %s" % (mode, exc))
            self.running = False
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
        _STARTED.discard(self)


class External:
    """An existing server (``A2A_TEST_POSTGRES_URL``, a ``postgresql://``
    URL): same API as ``Cluster``.

    Databases are created beside the one the URL names, so its role must be
    allowed to create databases.
    """

    def __init__(self, url):
        self.base = url

    def start(self):
        self.query("SELECT 1")
        return self

    def url(self, db="postgres"):
        parts = urllib.parse.urlsplit(self.base)
        return urllib.parse.urlunsplit(parts._replace(path="/" + db))

    def query(self, sql, db=None):
        import psycopg

        with psycopg.connect(self.url(db) if db else self.base, autocommit=True,
                             connect_timeout=10) as conn:
            cur = conn.execute(sql)
            return cur.fetchone()[0] if cur.description else None

    create_db = Cluster.create_db
    drop_db = Cluster.drop_db

    def stop(self):
        pass
