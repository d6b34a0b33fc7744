"""No 500 for bad input (issue 18): property-based, over every parameter of
every method, both protocol versions, both 1.0 bindings, SQLite and
PostgreSQL. Each example takes a valid call and puts a hostile value (an
out-of-range integer, an odd timestamp, a NUL, odd Unicode, a wrong type)
in one or two of its parameters; the answer must never be an internal
error (-32603, HTTP 500) and nothing may be logged with a traceback.

Bounded in time for CI: a fixed number of examples per backend, no
shrinking database between examples (one app per backend)."""

import json
import logging
from urllib.parse import quote

from hypothesis import HealthCheck, given, settings, strategies as st

from helpers import message

EXAMPLES = 120
RPC = "/api/v1/agents/%s/a2a"
REST = "/api/v1/agents/%s/rest"

BIG_INTS = [2 ** 31, 2 ** 31 - 1, 2 ** 53 + 1, 2 ** 63 - 1, 2 ** 63, 2 ** 64,
            -2 ** 63 - 1, -1, 10 ** 30]
TIMESTAMPS = ["0001-01-01T00:00+14:00", "9999-12-31T23:59:59-14:00",
              "0000-00-00T00:00:00Z", "2024-02-30T00:00:00Z", "2024-01-01",
              "2024-01-01T25:00:00Z", "2024-01-01T00:00:00+99:00",
              "9999-12-31T23:59:59.999999Z", "1-1-1T1:1:1Z"]
ODD_TEXT = ["\x00", "a\x00b", "\u2028\u2029", "\u202e", "\ufeff", "\uffff",
            "\U0010ffff", "\x1b[2J", "\r\n", "%00", "..%2f", "' OR 1=1 --",
            "\\u0000", "a" * 5000]


def hostile():
    return st.one_of(
        st.sampled_from(BIG_INTS), st.integers(), st.floats(allow_nan=False,
                                                            allow_infinity=False),
        st.booleans(), st.none(), st.sampled_from(TIMESTAMPS),
        st.sampled_from(ODD_TEXT), st.text(max_size=40),
        st.lists(st.sampled_from(ODD_TEXT + [0, None]), max_size=3),
        st.dictionaries(st.sampled_from(["\x00", "a", ""]),
                        st.sampled_from([0, "\x00", None]), max_size=2))


def hostile_query():
    """What a query string can carry: text only."""
    return st.one_of(
        st.sampled_from([str(n) for n in BIG_INTS] + TIMESTAMPS + ODD_TEXT
                        + ["1e3", "0x10", " 7", "-0", "１２", "true", "", "null"]),
        st.text(max_size=40))


def _leaves(value, path=()):
    """Every path to a member of ``value`` (objects and lists), leaves and
    inner nodes alike."""
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, path + (index,))


def _replaced(value, path, new):
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _replaced(value[path[0]], path[1:], new)
    return copy


def _templates(task_id, context_id, token):
    msg03 = message(contextId=context_id, taskId=task_id,
                    referenceTaskIds=[task_id], metadata={"k": 1})
    msg10 = {"messageId": "m", "role": "ROLE_USER", "contextId": context_id,
             "taskId": task_id, "parts": [{"text": "hi", "metadata": {}}],
             "referenceTaskIds": [task_id], "metadata": {"k": 1},
             "extensions": ["x"]}
    list10 = {"contextId": context_id, "status": "TASK_STATE_COMPLETED",
              "pageSize": 10, "pageToken": token, "historyLength": 1,
              "statusTimestampAfter": "2020-01-01T00:00:00Z",
              "includeArtifacts": True}
    rpc = [
        ("0.3", "message/send", {"message": msg03, "metadata": {},
                                 "configuration": {"historyLength": 1,
                                                   "blocking": True,
                                                   "acceptedOutputModes": ["text/plain"]}}),
        ("0.3", "tasks/get", {"id": task_id, "historyLength": 1}),
        ("0.3", "tasks/cancel", {"id": task_id, "metadata": {}}),
        ("0.3", "agent/getAuthenticatedExtendedCard", {}),
        ("1.0", "SendMessage", {"message": msg10, "metadata": {},
                                "configuration": {"historyLength": 1,
                                                  "returnImmediately": False,
                                                  "acceptedOutputModes": ["text/plain"]}}),
        ("1.0", "GetTask", {"id": task_id, "historyLength": 1}),
        ("1.0", "CancelTask", {"id": task_id}),
        ("1.0", "ListTasks", list10),
        ("1.0", "GetExtendedAgentCard", {}),
    ]
    rest_query = [("GET", "/tasks/%s", {"historyLength": "1"}),
                  ("GET", "/tasks", {k: str(v).lower() if isinstance(v, bool)
                                     else str(v) for k, v in list10.items()})]
    rest_body = [("POST", "/message:send", {"message": msg10}),
                 ("POST", "/tasks/%s:cancel", {})]
    return rpc, rest_query, rest_body


class _Tracebacks(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        if record.exc_info or record.levelno >= logging.ERROR:
            self.records.append(self.format(record))


def _service(app):
    runtime = app.extensions["a2a"]
    key = runtime.credentials.create_key(None, "fuzz")[1]
    client = app.test_client()
    headers = {"X-API-Key": key}
    sent = client.post(RPC % "echo", headers=headers, json={
        "jsonrpc": "2.0", "id": 1, "method": "message/send",
        "params": {"message": message()}}).get_json()["result"]
    listed = client.get(REST % "echo" + "/tasks", query_string={"pageSize": "1"},
                        headers=dict(headers, **{"A2A-Version": "1.0"}))
    token = listed.get_json().get("nextPageToken") or "dG9rZW4="
    return client, headers, _templates(sent["id"], sent["contextId"], token)


def _fuzz(app):
    client, headers, (rpc, rest_query, rest_body) = _service(app)
    catcher = _Tracebacks()
    logger = logging.getLogger("a2a_flask")
    logger.addHandler(catcher)
    level = logger.level
    logger.setLevel(logging.INFO)

    def check(response, what):
        assert response.status_code != 500, (what, response.data[:300])
        body = response.get_json(silent=True)
        if isinstance(body, dict):
            error = body.get("error") if "jsonrpc" in body else body
            if isinstance(error, dict):
                assert error.get("code") != -32603, (what, body)
                assert error.get("status") != "INTERNAL", (what, body)
        assert not catcher.records, (what, catcher.records[:1])

    call = st.one_of(
        st.tuples(st.just("rpc"), st.sampled_from(rpc)),
        st.tuples(st.just("query"), st.sampled_from(rest_query)),
        st.tuples(st.just("body"), st.sampled_from(rest_body)))

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(call=call, data=st.data())
    def one(call, data):
        kind, template = call
        if kind == "rpc":
            version, method, params = template
            for _ in range(data.draw(st.integers(1, 2))):
                path = data.draw(st.sampled_from(list(_leaves(params))))
                params = _replaced(params, path, data.draw(hostile()))
            request = {"jsonrpc": "2.0", "id": 1, "method": method,
                       "params": params}
            head = dict(headers, **({"A2A-Version": "1.0"} if version == "1.0" else {}))
            response = client.post(RPC % "echo", headers=head,
                                   data=json.dumps(request),
                                   content_type="application/json")
            check(response, request)
            return
        http_method, path, params = template
        task_id = data.draw(st.one_of(st.just(_task_of(rpc)), hostile_query()))
        if "%s" in path:
            path = path % quote(task_id, safe="")
        head = dict(headers, **{"A2A-Version": "1.0"})
        if kind == "query":
            params = dict(params)
            for _ in range(data.draw(st.integers(1, 2))):
                name = data.draw(st.sampled_from(sorted(params) or ["x"]))
                params[name] = data.draw(hostile_query())
            response = client.open(REST % "echo" + path, method=http_method,
                                   query_string=params, headers=head)
        else:
            for _ in range(data.draw(st.integers(1, 2))):
                where = data.draw(st.sampled_from(list(_leaves(params))))
                params = _replaced(params, where, data.draw(hostile()))
            response = client.open(REST % "echo" + path, method=http_method,
                                   data=json.dumps(params), headers=head,
                                   content_type="application/json")
        check(response, (http_method, path, params))

    try:
        one()
    finally:
        logger.removeHandler(catcher)
        logger.setLevel(level)


def _task_of(rpc):
    return rpc[1][2]["id"]


def test_no_internal_error_for_any_param_on_sqlite(make_app):
    app, _ = make_app(A2A_AUTH="required")
    _fuzz(app)


def test_no_internal_error_for_any_param_on_postgres(make_app, postgres_url):
    app, _ = make_app(A2A_AUTH="required", A2A_DATABASE=postgres_url)
    _fuzz(app)


def test_an_early_timestamp_filters_as_early(make_app):
    # Year 5 in UTC: every task is after it (compared as "0005-...", not "5-...").
    app, _ = make_app(A2A_AUTH="required")
    client, headers, _ = _service(app)
    response = client.get(REST % "echo" + "/tasks", headers=dict(
        headers, **{"A2A-Version": "1.0"}),
        query_string={"statusTimestampAfter": "0005-01-01T00:00:00Z"})
    assert response.status_code == 200 and response.get_json()["totalSize"] == 1
