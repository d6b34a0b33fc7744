"""The SQLite floor (docs/compatibility.md): a library below 3.31.1, or one
built without the JSON functions, is refused when the app is built, with a
message naming what was found and what is needed, before any caller's call
meets it. The matrix's legs on 3.31.1 and 3.34.0 prove the floor itself."""

import sqlite3

import pytest
from flask import Flask

from a2a_flask import A2A
from a2a_flask.storage.errors import UnsupportedSqliteError
from a2a_flask.storage.sqlite import library

# On the matrix too: its legs load Ubuntu 20.04's and Debian 11's SQLite.
pytestmark = pytest.mark.compat


def _app(tmp_path):
    app = Flask("floor")
    app.config["A2A_DATABASE"] = str(tmp_path / "a2a.sqlite3")
    A2A(app)
    return app


def test_a_sqlite_below_the_floor_is_refused_at_start(tmp_path, monkeypatch):
    monkeypatch.setattr(library.sqlite3, "sqlite_version_info", (3, 30, 1))
    with pytest.raises(UnsupportedSqliteError) as refused:
        _app(tmp_path)
    assert str(refused.value) == (
        "Python loads SQLite 3.30.1; a2a_flask needs SQLite 3.31.1 or later. "
        "Upgrade the system's libsqlite3, or use a Python linked against a "
        "newer one.")
    assert not (tmp_path / "a2a.sqlite3").exists()  # refused before any file


def test_the_floor_itself_is_served(tmp_path, monkeypatch):
    monkeypatch.setattr(library.sqlite3, "sqlite_version_info", (3, 31, 1))
    answer = _app(tmp_path).test_client().get("/api/v1/health")
    assert answer.status_code == 200


class _NoJson:
    """A connection of a SQLite built without JSON1."""

    def execute(self, sql):
        if "json_" in sql:
            raise sqlite3.OperationalError("no such function: json_remove")
        raise AssertionError(sql)

    def close(self):
        pass


def test_a_sqlite_without_the_json_functions_is_refused_at_start(tmp_path, monkeypatch):
    real_connect = sqlite3.connect

    def connect(database, *args, **kwargs):
        return _NoJson() if database == ":memory:" else real_connect(database, *args, **kwargs)

    monkeypatch.setattr(library.sqlite3, "connect", connect)
    with pytest.raises(UnsupportedSqliteError) as refused:
        _app(tmp_path)
    assert str(refused.value) == (
        "Python loads SQLite %s built without the JSON functions (no such "
        "function: json_remove); a2a_flask needs them. Debian's and Ubuntu's "
        "libsqlite3 have them; a SQLite built from source needs "
        "-DSQLITE_ENABLE_JSON1." % sqlite3.sqlite_version)
    assert not (tmp_path / "a2a.sqlite3").exists()


def test_the_loaded_sqlite_passes_the_check():
    library.check_sqlite_library()  # the library this run loads
    assert sqlite3.sqlite_version_info >= library.SQLITE_FLOOR
