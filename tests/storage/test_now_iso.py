"""``now_iso`` writes the second's text once and reuses it within the
second: the text is the same as ``strftime`` writes, across seconds, days,
years (below 1000 too) and back again."""

from datetime import datetime, timedelta, timezone

import pytest

from a2a_flask.storage import common
from a2a_flask.storage.common import now_iso


def _written(moment):
    text = moment.strftime("%Y-%m-%dT%H:%M:%S.")
    if moment.year < 1000:
        text = "%04d%s" % (moment.year, text[text.index("-"):])
    return text + "%03dZ" % (moment.microsecond // 1000)


MOMENTS = [
    datetime(2026, 12, 6, 17, 0, 0, 0, timezone.utc),
    datetime(2026, 12, 6, 17, 0, 0, 999999, timezone.utc),
    datetime(2026, 12, 6, 17, 0, 1, 1000, timezone.utc),
    datetime(2026, 12, 6, 17, 0, 0, 500000, timezone.utc),  # back a second
    datetime(2026, 12, 31, 23, 59, 59, 999000, timezone.utc),
    datetime(2027, 1, 1, 0, 0, 0, 0, timezone.utc),
    datetime(5, 1, 1, 0, 0, 0, 0, timezone.utc),
    datetime(999, 12, 31, 23, 59, 59, 0, timezone.utc),
    datetime(2026, 12, 6, 17, 0, 0, 1000, timezone.utc),
]


@pytest.mark.parametrize("start", range(len(MOMENTS)))
def test_the_text_of_each_moment_whatever_came_before(start):
    for moment in MOMENTS[start:] + MOMENTS[:start]:
        assert now_iso(moment) == _written(moment)


def test_the_same_second_in_another_minute_is_not_taken_for_it():
    base = datetime(2026, 12, 6, 17, 0, 7, 0, timezone.utc)
    for minutes in range(3):
        moment = base + timedelta(minutes=minutes)
        assert now_iso(moment) == _written(moment)
        assert common._LAST_SECOND[1] == _written(moment)[:-4]


def test_now_is_now():
    before = datetime.now(timezone.utc).replace(microsecond=0)
    text = now_iso()
    after = datetime.now(timezone.utc)
    assert _written(before)[:19] <= text[:19] <= _written(after)[:19]
    assert len(text) == 24 and text.endswith("Z")
