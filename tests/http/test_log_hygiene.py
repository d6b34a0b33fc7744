"""Clean logs (issue 18): what a caller sends never forges a record or
floods the log. Every field of the access record is escaped (no control
characters, no line breaks) in the plain and JSON formats and cut at 200
characters with the length noted; an answer repeats at most a short prefix
of what was sent; anonymous refusals are recorded within a per-address
budget, the dropped ones counted."""

import json
import logging
import re

import pytest

from a2a_flask import logs
from helpers import message

FORMATS = {"plain": logs.formatter("plain"), "json": logs.formatter("json")}
UNSAFE = "\n\r\x1b\x00\x85\u2028\u202e"
FORGED = "\ncall agent=echo method=tasks/get outcome=completed"


def _lines(records, fmt):
    return [FORMATS[fmt].format(r) for r in records]


def _assert_one_clean_line(text):
    assert "\n" not in text and "\r" not in text
    for char in UNSAFE + "\x7f\x1f":
        assert char not in text, repr(char)


@pytest.fixture
def anonymous(make_app):
    app, _ = make_app(A2A_AUTH="off")
    return app.test_client()


def _access_records(caplog):
    return [r for r in caplog.records if r.name == "a2a_flask.access"]


@pytest.mark.parametrize("fmt", ["plain", "json"])
def test_control_characters_in_any_field_stay_on_one_line(anonymous, caplog, fmt):
    with caplog.at_level(logging.INFO, logger="a2a_flask"):
        anonymous.post("/api/v1/agents/echo/a2a", json={
            # (no NUL in a method or a stored id: one holding it is refused)
            "jsonrpc": "2.0", "id": 1,
            "method": "tasks/get" + FORGED + UNSAFE.replace("\x00", ""),
            "params": {"id": "t" + FORGED + UNSAFE}})
        anonymous.post("/api/v1/agents/echo/a2a", json={
            "jsonrpc": "2.0", "id": 2, "method": "tasks/get",
            "params": {"id": "t" + FORGED + UNSAFE}})
        anonymous.post("/api/v1/agents/echo/a2a", json={
            "jsonrpc": "2.0", "id": 3, "method": "message/send",
            "params": {"message": message(
                contextId="c" + FORGED + UNSAFE.replace("\x00", ""))}})
    records = _access_records(caplog)
    assert len(records) == 3
    for line in _lines(records, fmt):
        _assert_one_clean_line(line)
        if fmt == "plain":  # outside quoted values, each field once
            assert re.sub(r'"(?:[^"\\]|\\.)*"', "", line).count("outcome=") == 1
    if fmt == "json":
        entries = [json.loads(line) for line in _lines(records, fmt)]
        assert entries[0]["method"].startswith("tasks/get\\x0acall agent=echo")
        assert entries[1]["taskId"].startswith("t\\x0acall agent=echo")
        assert entries[2]["contextId"].startswith("c\\x0acall")


def test_the_plain_record_quotes_a_value_that_would_read_as_another_field(
        anonymous, caplog):
    with caplog.at_level(logging.INFO, logger="a2a_flask"):
        anonymous.post("/api/v1/agents/echo/a2a", json={
            "jsonrpc": "2.0", "id": 1, "method": "x outcome=completed"})
    line = _lines(_access_records(caplog), "plain")[0]
    assert 'method="x outcome=completed"' in line
    assert re.sub(r'"(?:[^"\\]|\\.)*"', "", line).count("outcome=") == 1


def test_a_huge_method_name_is_logged_cut_and_echoed_as_a_prefix(anonymous, caplog):
    name = "m" * (1024 * 1024 - 200)
    with caplog.at_level(logging.INFO, logger="a2a_flask"):
        response = anonymous.post("/api/v1/agents/echo/a2a", json={
            "jsonrpc": "2.0", "id": 1, "method": name})
    assert response.get_json()["error"]["code"] == -32601
    assert len(response.data) < 2000
    record = _access_records(caplog)[0]
    assert record.method == "m" * 200 + "...(%d chars)" % len(name)
    for fmt in FORMATS:
        assert len(_lines([record], fmt)[0]) < 1000


def test_other_records_of_the_package_are_escaped_and_cut(anonymous, caplog):
    with caplog.at_level(logging.INFO, logger="a2a_flask"):
        logging.getLogger("a2a_flask").warning("agent %s says %s", "x\ny", "z" * 500)
    record = [r for r in caplog.records if r.name == "a2a_flask"][-1]
    for fmt in FORMATS:
        line = _lines([record], fmt)[0]
        _assert_one_clean_line(line)
        assert "...(500 chars)" in line


def test_anonymous_refusals_are_logged_within_a_budget_with_a_dropped_count(
        make_app, caplog):
    app, _ = make_app(A2A_AUTH="required")
    clock = [1000.0]
    app.extensions["a2a"].refusals.clock = lambda: clock[0]
    client = app.test_client()

    def refused(count):
        for _ in range(count):
            assert client.post("/api/v1/agents/echo/a2a", json={
                "jsonrpc": "2.0", "id": 1, "method": "tasks/get"}).status_code == 401

    with caplog.at_level(logging.INFO, logger="a2a_flask"):
        refused(200)
        assert len(_access_records(caplog)) == 20
        clock[0] += 1.0  # one more record a second (60 a minute)
        refused(5)
    records = _access_records(caplog)
    assert len(records) == 21
    assert records[-1].dropped == 180
    assert _lines(records[-1:], "plain")[0].endswith(" dropped=180")
    # A caller with a key is always recorded, refused or not.
    key = app.extensions["a2a"].credentials.create_key(None, "k")[1]
    with caplog.at_level(logging.INFO, logger="a2a_flask"):
        for _ in range(30):
            client.post("/api/v1/agents/echo/a2a", headers={"X-API-Key": key},
                        json={"jsonrpc": "2.0", "id": 1, "method": "tasks/get",
                              "params": {"id": "nope"}})
    assert len(_access_records(caplog)) == 21 + 30
