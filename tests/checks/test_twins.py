"""tools/twins.py, .ci/run's check that a change does not write again what
the package holds: it fails on a repeated run of added lines, and only then."""

import os
import subprocess
import sys

TWINS = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "twins.py")

BODY = '''def first(stream, length):
    chunks = []
    left = length
    while left > 0:
        chunk = stream.read(min(left, 65536))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
'''


def _git(repo, *args):
    subprocess.run(("git", "-c", "user.name=t", "-c", "user.email=t@t") + args,
                   cwd=repo, check=True, capture_output=True)


def _twins(repo, *args):
    return subprocess.run([sys.executable, TWINS, "--repo", str(repo)] + list(args),
                          capture_output=True, text=True)


def _repo(tmp_path):
    os.makedirs(tmp_path / "a2a_flask")
    (tmp_path / "a2a_flask" / "one.py").write_text(BODY)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "one")
    return tmp_path


def test_a_change_that_writes_a_function_again_fails(tmp_path):
    repo = _repo(tmp_path)
    (repo / "a2a_flask" / "two.py").write_text(BODY.replace("first", "second"))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "two")
    done = _twins(repo)
    assert done.returncode == 1, done.stdout
    assert "twins: a2a_flask/two.py:2-7 repeats a2a_flask/one.py:2-7" in done.stdout
    assert "1 run(s) of 6 lines that the change since HEAD~1 writes again" in done.stdout
    # An untracked file counts as added too.
    (repo / "a2a_flask" / "three.py").write_text(BODY)
    assert "a2a_flask/three.py" in _twins(repo).stdout


def test_a_change_with_nothing_repeated_passes(tmp_path):
    repo = _repo(tmp_path)
    (repo / "a2a_flask" / "two.py").write_text(
        "def second(x):\n    return x + 1\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "two")
    done = _twins(repo)
    assert done.returncode == 0, done.stdout
    assert "0 run(s)" in done.stdout
    # Six repeated lines that are only punctuation, comments and imports
    # say nothing: not a twin.
    (repo / "a2a_flask" / "three.py").write_text(
        "import os\n# a\n)\n]\n}\nfrom x import y\n" * 2)
    assert _twins(repo).returncode == 0


def test_the_first_commit_has_nothing_to_compare_with(tmp_path):
    done = _twins(_repo(tmp_path))
    assert done.returncode == 0
    assert "nothing checked" in done.stdout
