"""Ids: 128 random bits after the time, 6 bits per character, in time order."""

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
