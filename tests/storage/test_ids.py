"""Ids: 128 random bits after the time, 6 bits per character, in time order."""

import os
import re

from a2a_flask.storage import common


def test_ids_are_short_and_sort_in_the_order_they_were_made(monkeypatch):
    made = []
    for ms in (1, 2, 255, 256, 2 ** 40, 2 ** 47):
        monkeypatch.setattr(common.time, "time_ns", lambda ms=ms: ms * 1000000)
        made.extend(common.new_id("task_") for _ in range(20))
    assert all(re.fullmatch(r"task_[A-Za-z0-9_-]{30}", i) for i in made), made
    # Sorted as text, they keep their order across milliseconds (the random
    # part orders ids of one millisecond among themselves).
    assert [i[:13] for i in sorted(made)] == [i[:13] for i in made]
    assert len(set(made)) == len(made)


def _random_parts(ids):
    return {i[len("task_") + 8:] for i in ids}  # after the 48 bits of time


def test_a_forked_child_never_makes_the_ids_its_parent_makes():
    """The random parts are drawn from os.urandom ahead of use: a forked child
    (a gunicorn worker) must not take the ones its parent holds."""
    common.new_id("task_")  # the parent now holds parts not used yet
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(write, " ".join(common.new_id("task_") for _ in range(3)).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = pipe.read().split()
    os.waitpid(pid, 0)
    parent = [common.new_id("task_") for _ in range(3)]
    assert len(child) == 3
    assert not _random_parts(child) & _random_parts(parent)
