"""The PostgreSQL test fixtures: a server for the session, an empty database
per test, and skip-or-fail when there is none."""

import subprocess
import sys
import textwrap

import psycopg

from serving import REPO_DIR


def test_each_test_gets_an_empty_database_of_its_own(postgres_url, postgres_server):
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE marker (x int)")
        assert conn.execute("SELECT current_database()").fetchone()[0] == \
            postgres_url.rsplit("/", 1)[1]
    assert postgres_server.query("SELECT count(*) FROM pg_database WHERE datname = '%s'"
                                 % postgres_url.rsplit("/", 1)[1]) == 1


def test_a_second_test_does_not_see_the_firsts_tables(postgres_url):
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT to_regclass('marker')").fetchone()[0] is None


def _run_pytest(tmp_path, env):
    test = tmp_path / "test_needs_pg.py"
    test.write_text(textwrap.dedent("""
        def test_it(postgres_url):
            pass
    """))
    (tmp_path / "conftest.py").write_text(
        "import sys; sys.path.insert(0, %r)\n"
        "from pgfixtures import postgres_server, postgres_url  # noqa\n" % (REPO_DIR + "/tests"))
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           str(test)], cwd=str(tmp_path), env=env, capture_output=True,
                          text=True, timeout=120)


def _env(**extra):
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("A2A_")}
    # no server binaries anywhere: a folder without initdb, and an empty PATH
    env.update(A2A_PG_BINDIR="/nonexistent", PATH="/nonexistent", **extra)
    return env


def test_without_postgres_the_tests_skip_saying_why(tmp_path):
    out = _run_pytest(tmp_path, _env())
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 skipped" in out.stdout
    assert "no PostgreSQL server binaries" in out.stdout


def test_when_postgres_is_required_its_absence_fails(tmp_path):
    out = _run_pytest(tmp_path, _env(A2A_TEST_REQUIRE_POSTGRES="1"))
    assert out.returncode == 1, out.stdout + out.stderr
    assert "1 error" in out.stdout
    assert "A2A_TEST_REQUIRE_POSTGRES=1" in out.stdout


def test_an_unreachable_url_is_reported(tmp_path):
    out = _run_pytest(tmp_path, _env(A2A_TEST_POSTGRES_URL="postgresql://nobody@127.0.0.1:1/x"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "A2A_TEST_POSTGRES_URL does not answer" in out.stdout


def test_the_cluster_is_gone_after_the_session(tmp_path):
    """A whole pytest session with a throwaway cluster leaves no server and no folder."""
    test = tmp_path / "test_pg_once.py"
    test.write_text("def test_it(postgres_server):\n"
                    "    print('CLUSTER', postgres_server.dir, postgres_server.postmaster_pid())\n")
    (tmp_path / "conftest.py").write_text(
        "import sys; sys.path.insert(0, %r)\n"
        "from pgfixtures import postgres_server  # noqa\n" % (REPO_DIR + "/tests"))
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("A2A_TEST_POSTGRES")}
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
                          str(test)], cwd=str(tmp_path), env=env, capture_output=True,
                         text=True, timeout=180)
    assert out.returncode == 0, out.stdout + out.stderr
    folder, pid = out.stdout.split("CLUSTER ", 1)[1].split()[:2]
    assert not os.path.exists(folder)
    assert _gone(pid)


def _gone(pid):
    """No such process, or a zombie (whoever is init here may not reap it)."""
    try:
        with open("/proc/%s/status" % pid) as f:
            return "\nState:\tZ" in f.read()
    except FileNotFoundError:
        return True


def test_a_terminated_session_stops_its_cluster(tmp_path):
    """SIGTERM to pytest mid-session: the cluster is stopped and removed."""
    import os
    import signal
    import time

    marker = tmp_path / "cluster.txt"
    test = tmp_path / "test_pg_hang.py"
    test.write_text(
        "import time\n"
        "def test_it(postgres_server):\n"
        "    open(%r, 'w').write('%%s %%d' %% (postgres_server.dir,"
        " postgres_server.postmaster_pid()))\n"
        "    time.sleep(60)\n" % str(marker))
    (tmp_path / "conftest.py").write_text(
        "import sys; sys.path.insert(0, %r)\n"
        "from pgfixtures import postgres_server  # noqa\n" % (REPO_DIR + "/tests"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("A2A_TEST_POSTGRES")}
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             str(test)], cwd=str(tmp_path), env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (marker.exists() and marker.read_text()):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.1)
        folder, pid = marker.read_text().split()
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not os.path.exists(folder)
    assert _gone(pid)
