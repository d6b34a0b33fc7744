"""docs/protocol.md §3: the JSON-RPC envelope, checked in order; the first failure answers."""

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from helpers import check_answer, message


def call(method="message/send", params=None, id=1, **extra):
    body = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        body["params"] = params
    body.update(extra)
    return body


SEND = {"message": {"kind": "message", "role": "user", "messageId": "m-env",
                    "parts": [{"kind": "text", "text": "hi"}]}}


def error_of(rpc, body, raw=False, status=200, **kwargs):
    got, answer = rpc.post(body, raw=raw, **kwargs)
    assert got == status, answer
    assert "result" not in answer, answer
    return answer["id"], answer["error"]


# -- 1. not JSON, not UTF-8 -------------------------------------------------------


@pytest.mark.parametrize("body", [
    b"", b"{", b"not json", b'{"jsonrpc": "2.0", "id": 1,}', b"{'a': 1}",
])
def test_body_not_json_is_parse_error_with_null_id(rpc, body):
    request_id, error = error_of(rpc, body, raw=True)
    assert error["code"] == -32700
    assert request_id is None


def test_body_not_utf8_is_parse_error(rpc):
    body = json.dumps(call("tasks/get", {"id": "caf\u00e9"})).encode("latin-1")
    body = body.replace(b"\\u00e9", "\u00e9".encode("latin-1"))
    assert b"\xe9" in body
    request_id, error = error_of(rpc, body, raw=True)
    assert (request_id, error["code"]) == (None, -32700)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_number_constants_are_parse_errors(rpc, constant):
    body = ('{"jsonrpc": "2.0", "id": 1, "method": "tasks/get",'
            ' "params": {"id": "x", "historyLength": %s}}' % constant)
    request_id, error = error_of(rpc, body.encode(), raw=True)
    assert (request_id, error["code"]) == (None, -32700)


def test_number_overflowing_to_infinity_is_parse_error(rpc):
    # 1e400 reads as float("inf") in Python: it would be echoed as "Infinity",
    # which is not JSON.
    body = json.dumps(call(params=SEND)).replace(
        '"parts"', '"metadata": {"x": 1e400}, "parts"')
    request_id, error = error_of(rpc, body.encode(), raw=True)
    assert (request_id, error["code"]) == (None, -32700)


def test_lone_surrogate_escape_is_parse_error(rpc):
    # Valid JSON grammar, but no UTF-8 text can carry it (nor store it).
    body = b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "tasks/get"}'
    request_id, error = error_of(rpc, body, raw=True)
    assert (request_id, error["code"]) == (None, -32700)


@pytest.mark.parametrize("depth", [101, 990, 5000, 100000])
@pytest.mark.parametrize("where", ["body", "metadata"])
def test_json_nested_too_deeply_is_parse_error(rpc, depth, where):
    nested = "[" * depth + "]" * depth
    if where == "body":
        body = nested
    else:
        body = json.dumps(call(params=SEND)).replace(
            '"parts"', '"metadata": {"x": %s}, "parts"' % nested[4:-4])
    request_id, error = error_of(rpc, body.encode(), raw=True)
    assert (request_id, error["code"]) == (None, -32700)
    assert "deep" in error["message"]


def test_reasonably_nested_json_is_read(rpc):
    nested = {"x": 1}
    for _ in range(40):
        nested = {"x": [nested]}
    status, answer = rpc.post(call(params={"message": message(
        parts=[{"kind": "text", "text": "t"}, {"kind": "data", "data": nested}])}))
    assert answer["result"]["history"][0]["parts"][1]["data"] == nested


def test_body_is_read_whatever_the_content_type(rpc):
    body = json.dumps(call(params={"message": message("hi")})).encode()
    for content_type in ("text/plain", "application/octet-stream", None):
        headers = {"Content-Type": content_type} if content_type else {}
        status, answer = rpc.post(body, raw=True, headers=headers)
        assert status == 200 and answer["result"]["status"]["state"] == "completed"


def test_parse_error_comes_before_everything_else(make_rpc):
    rpc = make_rpc(A2A_STRICT_JSONRPC=True)
    request_id, error = error_of(rpc, b'[{"id": true', raw=True)
    assert (request_id, error["code"]) == (None, -32700)


# -- 2. batch, not an object ------------------------------------------------------


@pytest.mark.parametrize("body", [[], [call("tasks/get", {"id": "x"})]])
def test_batch_is_refused(rpc, body):
    request_id, error = error_of(rpc, body)
    assert error["code"] == -32600
    assert request_id is None
    assert "batch requests are not supported" in error["message"].lower()


@pytest.mark.parametrize("body", [b"1", b'"call"', b"null", b"true", b"2.5"])
def test_body_not_an_object_is_invalid_request(rpc, body):
    request_id, error = error_of(rpc, body, raw=True)
    assert (request_id, error["code"]) == (None, -32600)
    assert "batch" not in error["message"].lower()


# -- 3. id ----------------------------------------------------------------------------


@pytest.mark.parametrize("bad_id", [1.5, True, False, [1], {"a": 1}])
def test_id_of_wrong_type_is_invalid_request_with_null_id(rpc, bad_id):
    request_id, error = error_of(rpc, call("tasks/get", {"id": "x"}, id=bad_id))
    assert (request_id, error["code"]) == (None, -32600)
    assert error["data"]["field"] == "id"


@pytest.mark.parametrize("good_id", ["abc", "", 0, -7, 2 ** 40, None])
def test_valid_ids_are_echoed(rpc, good_id):
    status, answer = rpc.post(call(params=SEND, id=good_id))
    assert status == 200
    assert answer["id"] == good_id and type(answer["id"]) is type(good_id)
    assert answer["result"]["status"]["state"] == "completed"


def test_id_is_checked_before_method_and_jsonrpc(rpc):
    request_id, error = error_of(rpc, {"id": 1.5})
    assert (request_id, error["code"], error["data"]["field"]) == (None, -32600, "id")


def test_request_without_id_is_answered_with_null_id(rpc):
    body = call(params=SEND)
    del body["id"]
    status, answer = rpc.post(body)
    assert status == 200
    assert answer["id"] is None
    assert answer["result"]["status"]["state"] == "completed"


def test_error_for_request_without_id_is_answered_with_null_id(rpc):
    body = call("no/such/method")
    del body["id"]
    request_id, error = error_of(rpc, body)
    assert (request_id, error["code"]) == (None, -32601)


# -- 4. method ------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["missing", None, 5, ["message/send"], {}])
def test_method_missing_or_not_a_string_is_invalid_request(rpc, method):
    body = {"jsonrpc": "2.0", "id": "req-7"}
    if method != "missing":
        body["method"] = method
    request_id, error = error_of(rpc, body)
    assert (request_id, error["code"]) == ("req-7", -32600)
    assert error["data"]["field"] == "method"
    assert "method" in error["message"]


def test_method_is_checked_before_jsonrpc(rpc):
    request_id, error = error_of(rpc, {"id": 3})
    assert (request_id, error["code"], error["data"]["field"]) == (3, -32600, "method")


# -- 5. jsonrpc -----------------------------------------------------------------------


def test_missing_jsonrpc_is_invalid_request_by_default(rpc):
    body = call(params=SEND, id="j")
    del body["jsonrpc"]
    request_id, error = error_of(rpc, body)
    assert (request_id, error["code"], error["data"]["field"]) == ("j", -32600, "jsonrpc")


@pytest.mark.parametrize("version", ["2.0", "1.0", "", 2, 2.0, None, {"v": 2}])
def test_any_present_jsonrpc_value_is_accepted_by_default(rpc, version):
    status, answer = rpc.post(call(params=SEND, jsonrpc=version))
    assert status == 200
    assert answer["jsonrpc"] == "2.0"
    assert answer["result"]["status"]["state"] == "completed"


@pytest.mark.parametrize("version", ["missing", "1.0", "", 2, 2.0, None, "2.0 "])
def test_strict_mode_refuses_anything_but_2_0(make_rpc, version):
    rpc = make_rpc(A2A_STRICT_JSONRPC=True)
    body = call(params=SEND, id=9)
    if version == "missing":
        del body["jsonrpc"]
    else:
        body["jsonrpc"] = version
    request_id, error = error_of(rpc, body)
    assert (request_id, error["code"], error["data"]["field"]) == (9, -32600, "jsonrpc")


def test_strict_mode_accepts_2_0(make_rpc):
    rpc = make_rpc(A2A_STRICT_JSONRPC=True)
    status, answer = rpc.post(call(params=SEND))
    assert status == 200 and answer["result"]["status"]["state"] == "completed"


# -- 6. unknown method ----------------------------------------------------------------


@pytest.mark.parametrize("method", ["tasks/list", "message/sendd", ""])
def test_unknown_method_names_it(rpc, method):
    request_id, error = error_of(rpc, call(method, {"id": "x"}, id="u"))
    assert (request_id, error["code"]) == ("u", -32601)
    assert repr(method) in error["message"]
    assert error["data"]["method"] == method


def test_unknown_method_comes_before_bad_params(rpc):
    _, error = error_of(rpc, call("no/such", params=[1, 2]))
    assert error["code"] == -32601


# -- 7. params ------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["message/send", "tasks/get", "tasks/cancel"])
@pytest.mark.parametrize("params", [[], [1], "x", 3, True])
def test_params_not_an_object_is_invalid_params(rpc, method, params):
    request_id, error = error_of(rpc, call(method, params, id="p"))
    assert (request_id, error["code"]) == ("p", -32602)
    assert error["data"]["field"] == "params"
    assert "params" in error["message"]


@pytest.mark.parametrize("method, field", [
    ("message/send", "message"), ("tasks/get", "id"), ("tasks/cancel", "id"),
])
@pytest.mark.parametrize("params", ["absent", None, {}])
def test_params_absent_for_a_method_that_needs_them(rpc, method, field, params):
    body = call(method, id=4)
    if params != "absent":
        body["params"] = params
    request_id, error = error_of(rpc, body)
    assert (request_id, error["code"]) == (4, -32602)
    assert error["data"]["field"] == field
    assert field in error["message"]


# -- the answer -----------------------------------------------------------------------


def test_body_over_the_size_limit_is_413(make_rpc):
    rpc = make_rpc(A2A_MAX_CONTENT_LENGTH=300)
    params = {"message": message("x" * 400)}
    request_id, error = error_of(rpc, call(params=params), status=413)
    assert error["code"] == -32600
    assert "300" in error["message"]
    # Just under the limit still goes through.
    small = call(params={"message": message("y")})
    assert len(json.dumps(small)) < 300
    status, answer = rpc.post(small)
    assert status == 200 and answer["result"]["status"]["state"] == "completed"


def test_body_over_the_host_apps_max_content_length_is_413(make_rpc):
    rpc = make_rpc(MAX_CONTENT_LENGTH=200)
    request_id, error = error_of(
        rpc, call(params={"message": message("x" * 300)}), status=413)
    assert error["code"] == -32600


def test_error_response_shape(rpc):
    status, answer = rpc.post(call("tasks/get", {"id": "task_nope"}, id="s"))
    assert status == 200
    assert set(answer) == {"jsonrpc", "id", "error"}
    assert answer["jsonrpc"] == "2.0" and answer["id"] == "s"
    assert answer["error"]["code"] == -32001
    assert answer["error"]["message"].endswith(".")
    assert rpc.last_response.mimetype == "application/json"


# -- anything at all --------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12)


def maybe(strategy, *constants):
    return st.one_of(strategy, json_values, *map(st.just, constants))


def extras(base, **optional):
    """``base`` (a dict strategy) with some of ``optional``'s keys added."""
    return st.tuples(base, st.fixed_dictionaries({}, optional=optional)).map(
        lambda pair: {**pair[0], **pair[1]})


good_parts = st.lists(st.one_of(
    st.fixed_dictionaries({"kind": st.just("text"), "text": st.text(max_size=8)}),
    st.fixed_dictionaries({"kind": st.just("data"), "data": st.dictionaries(
        st.text(max_size=4), json_values, max_size=2)}),
    st.fixed_dictionaries({"kind": st.just("file"), "file": st.one_of(
        st.fixed_dictionaries({"bytes": st.just("aGk=")}),
        st.fixed_dictionaries({"uri": st.just("https://x/y")}))}),
), min_size=1, max_size=3)

parts = st.lists(extras(st.fixed_dictionaries({
    "kind": maybe(st.sampled_from(["text", "file", "data"])),
}), **{
    "text": maybe(st.text(max_size=8)),
    "data": maybe(st.dictionaries(st.text(max_size=4), json_values, max_size=2)),
    "file": maybe(st.fixed_dictionaries({}, optional={
        "bytes": maybe(st.sampled_from(["aGk=", "", "!!"])),
        "uri": maybe(st.sampled_from(["https://x/y", ""])),
        "name": json_values, "mimeType": json_values})),
    "metadata": json_values,
}), max_size=3)

good_messages = st.fixed_dictionaries({
    "role": st.just("user"), "parts": good_parts,
    "messageId": st.text(min_size=1, max_size=6),
})

message_extras = {
    "kind": maybe(st.just("message")), "contextId": json_values,
    "taskId": json_values, "metadata": json_values, "extensions": json_values,
    "referenceTaskIds": json_values, "other": json_values,
}

messages = st.one_of(
    extras(good_messages, **message_extras),
    extras(st.fixed_dictionaries({
        "role": maybe(st.just("user")), "parts": st.one_of(good_parts, parts, json_values),
        "messageId": maybe(st.text(min_size=1, max_size=6)),
    }), **message_extras),
)

envelopes = st.fixed_dictionaries({
    "jsonrpc": st.just("2.0"),
    "method": st.sampled_from([
        "message/send", "tasks/get", "tasks/cancel", "message/stream",
        "tasks/resubscribe", "tasks/pushNotificationConfig/set",
        "agent/getAuthenticatedExtendedCard"]),
}, optional={
    "id": st.one_of(st.integers(), st.text(max_size=4), st.none(), json_values),
    "params": maybe(st.fixed_dictionaries({}, optional={
        "message": st.one_of(good_messages, messages, json_values), "id": maybe(st.text(max_size=4)),
        "historyLength": json_values,
        "configuration": maybe(st.fixed_dictionaries({}, optional={
            "acceptedOutputModes": json_values, "historyLength": json_values,
            "blocking": json_values, "pushNotificationConfig": json_values})),
        "metadata": json_values})),
})


configurations = st.fixed_dictionaries({}, optional={
    "acceptedOutputModes": maybe(st.lists(st.sampled_from(
        ["text/plain", "text/*", "image/png", "*/*"]), max_size=2)),
    "historyLength": maybe(st.integers(min_value=-1, max_value=3)),
    "blocking": maybe(st.booleans()),
    "pushNotificationConfig": json_values})

sends = st.fixed_dictionaries({
    "jsonrpc": st.just("2.0"), "id": st.integers(), "method": st.just("message/send"),
    "params": extras(
        st.fixed_dictionaries({"message": st.one_of(good_messages, messages)}),
        configuration=st.one_of(configurations, json_values),
        metadata=json_values),
})


def _no_constant(name):
    raise AssertionError("%s in an answer is not JSON" % name)


def test_any_json_body_gets_a_valid_json_rpc_answer(make_rpc):
    rpc = make_rpc(agent="chat")

    @settings(max_examples=300, deadline=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(body=st.one_of(json_values, envelopes, sends))
    def check(body):
        response = rpc.client.post(rpc.path(), data=json.dumps(body))
        assert response.status_code == 200, response.data
        assert response.mimetype == "application/json"
        answer = json.loads(response.data, parse_constant=_no_constant)
        assert answer["jsonrpc"] == "2.0"
        check_answer(response.status_code, answer)
        if "error" in answer:
            assert answer["error"]["code"] != -32603, answer
            assert "Traceback" not in response.get_data(as_text=True)

    check()


envelope_shapes = st.fixed_dictionaries({}, optional={
    "jsonrpc": maybe(st.sampled_from(["2.0", "1.0", "2.0 "])),
    "method": maybe(st.text(max_size=6), "tasks/get", "a\x00b", ""),
    "id": st.one_of(st.integers(), st.text(max_size=4), st.none(), st.booleans(),
                    json_values),
    "params": json_values, "other": json_values,
})


@settings(max_examples=500, deadline=None)
@given(envelope_shapes, st.booleans())
def test_the_common_envelope_read_without_the_schema_is_what_the_schema_loads(data, strict):
    # Envelope.parse skips EnvelopeSchema's load for the common call: it must
    # take only envelopes the schema takes as they are, and read them alike.
    from a2a_flask.protocol.jsonrpc import ENVELOPE, STRICT_ENVELOPE, Envelope
    common = Envelope._common(data, strict)
    if common is None:
        return
    call = (STRICT_ENVELOPE if strict else ENVELOPE).load(data)  # raises if refused
    assert (common.id, common.method, common.params, common.error) == (
        call.get("id"), call["method"], call.get("params"), None)


def test_a_plain_call_takes_the_common_envelope():
    from a2a_flask.protocol.jsonrpc import Envelope
    parsed = Envelope.parse(json.dumps(call("tasks/get", {"id": "t"}, id="7")).encode(), True)
    assert Envelope._common(call("tasks/get", {"id": "t"}, id="7"), True) is not None
    assert (parsed.id, parsed.method, parsed.params, parsed.error) == (
        "7", "tasks/get", {"id": "t"}, None)


part_shapes = st.fixed_dictionaries({}, optional={
    "kind": st.sampled_from(["text", "text", "text", "file", "Text", "", None, 1]),
    "text": st.one_of(st.sampled_from(["a\x00b", "\x00", "", "hello"]),
                      st.text(max_size=6), st.integers(), st.none(),
                      st.binary(max_size=3), json_values),
    "metadata": json_values, "other": json_values,
})


def test_a_text_part_takes_the_shortcut(monkeypatch):
    from a2a_flask.messages import PART_SCHEMAS, PartField

    def no_load(*args, **kwargs):
        raise AssertionError("loaded by the schema")
    monkeypatch.setattr(PART_SCHEMAS["text"], "load", no_load)
    assert PartField().deserialize({"kind": "text", "text": "hello"}) == {
        "kind": "text", "text": "hello"}


v10_part_shapes = st.one_of(
    st.fixed_dictionaries({}, optional={
        "text": st.one_of(st.sampled_from(["a\x00b", "\x00", "", "hello", None]),
                          st.text(max_size=6), st.integers(), st.binary(max_size=3),
                          json_values),
        "data": json_values, "raw": st.sampled_from(["aGk=", "!"]),
        "media_type": st.sampled_from(["", "text/plain"]), "other": json_values}),
    json_values)


@settings(max_examples=1000, deadline=None)
@given(st.one_of(part_shapes, v10_part_shapes))
def test_a_text_part_read_without_the_schema_is_what_the_schema_loads(part):
    # Both bindings skip their part schema's load for a part that is text
    # alone: each must take only parts its schema takes, and read them alike.
    from a2a_flask.messages import PART_SCHEMAS, _text_alone as text_alone_0_3
    from a2a_flask.protocol.v10.schemas import PartSchema, _text_alone as text_alone_1_0
    readers = [(text_alone_1_0, PartSchema())]
    if isinstance(part, dict):  # PartField (0.3) refuses anything else first
        readers.append((text_alone_0_3, PART_SCHEMAS["text"]))
    for text_alone, schema in readers:
        common = text_alone(part)
        if common is not None:
            assert common == schema.load(part)  # raises if refused


def test_a_1_0_text_part_takes_the_shortcut(monkeypatch):
    from marshmallow import Schema

    from a2a_flask.protocol.v10.schemas import SEND_MESSAGE

    def no_load(*args, **kwargs):
        raise AssertionError("a part loaded by the schema")
    loaded = SEND_MESSAGE.load({"message": {"role": "ROLE_USER", "messageId": "m",
                                            "parts": [{"text": "hello"}]}})
    monkeypatch.setattr(Schema, "load", no_load)
    field = SEND_MESSAGE.fields["message"].schema.fields["parts"].inner
    assert field.deserialize({"text": "hello"}) == {"text": "hello"}
    assert loaded["message"]["parts"] == [{"text": "hello"}]


ids = st.one_of(st.sampled_from(["", "t", "a\x00b", "\x00", "x" * 256, "x" * 257,
                                 "\U0001F600" * 256, "\U0001F600" * 257]),
                st.text(max_size=6), st.integers(), st.none(), st.booleans(), json_values)
id_params_shapes = st.one_of(
    st.fixed_dictionaries({"id": ids}),
    st.fixed_dictionaries({}, optional={
        "id": ids, "historyLength": st.one_of(st.integers(-1, 3), json_values),
        "tenant": st.sampled_from(["", "t", None]), "metadata": json_values,
        "other": json_values}),
    json_values)


@settings(max_examples=1000, deadline=None)
@given(id_params_shapes)
def test_an_id_alone_read_without_the_schema_is_what_the_schema_loads(params):
    # The params of tasks/get and tasks/cancel, in both bindings, skip their
    # schema's load when they are an id alone: each schema must take such
    # params as they are, and read them alike.
    from marshmallow import Schema

    from a2a_flask.protocol.v03.schemas import TASK_ID_PARAMS, TASK_QUERY_PARAMS
    from a2a_flask.protocol.v10.schemas import CANCEL_TASK, GET_TASK, GET_TASK_QUERY
    from a2a_flask.validation import id_alone
    common = id_alone(params)
    if common is None:
        return
    for schema in (TASK_QUERY_PARAMS, TASK_ID_PARAMS, GET_TASK, CANCEL_TASK, GET_TASK_QUERY):
        assert common == Schema.load(schema, params)  # raises if refused


def test_get_and_cancel_by_an_id_alone_take_the_shortcut(monkeypatch):
    from marshmallow import Schema

    from a2a_flask.protocol.v03.schemas import TASK_ID_PARAMS, TASK_QUERY_PARAMS
    from a2a_flask.protocol.v10.schemas import CANCEL_TASK, GET_TASK

    def no_load(*args, **kwargs):
        raise AssertionError("loaded by the schema")
    monkeypatch.setattr(Schema, "load", no_load)
    for schema in (TASK_QUERY_PARAMS, TASK_ID_PARAMS, GET_TASK, CANCEL_TASK):
        assert schema.load({"id": "task-1"}) == {"id": "task-1"}


# A plain message of either binding, as sent, or one member changed (or
# taken out): many examples take a shortcut, and each way of not being one.
texts = st.one_of(st.text(max_size=4), st.sampled_from(["", "a\x00b"]))
names = st.text(min_size=1, max_size=6)


def plain(role, part, **optional):
    return st.fixed_dictionaries({
        "role": st.just(role), "messageId": names,
        "parts": st.lists(part, min_size=1, max_size=3)},
        optional=dict(optional, contextId=names, taskId=names))


plain_messages = st.one_of(
    plain("user", st.fixed_dictionaries({"kind": st.just("text"), "text": texts}),
          kind=st.just("message")),
    plain("ROLE_USER", st.fixed_dictionaries({"text": texts})))
bad_ids = st.one_of(ids, st.sampled_from(["", "a\x00b", "x" * 257, None]))
changes = st.one_of(
    st.tuples(st.sampled_from(["role", "messageId", "parts", "kind", "contextId", "taskId"]),
              st.just(KeyError)),
    st.tuples(st.sampled_from(["messageId", "contextId", "taskId"]), bad_ids),
    st.tuples(st.just("role"), st.sampled_from(["user", "ROLE_USER", "agent", "", None, 1])),
    st.tuples(st.just("kind"), st.sampled_from(["message", "Message", "", None, 1])),
    st.tuples(st.just("parts"), st.one_of(
        st.sampled_from([[], None, "hi", 1, [None], ["hi"], [{}]]),
        st.lists(st.one_of(part_shapes, v10_part_shapes), max_size=2), json_values)),
    st.tuples(st.sampled_from(["metadata", "message_id", "tenant", "other"]), json_values))


def changed(message, change):
    if change is not None:
        message = dict(message)
        name, value = change
        if value is KeyError:
            message.pop(name, None)
        else:
            message[name] = value
    return message


message_shapes = st.one_of(
    st.builds(changed, plain_messages, st.one_of(st.none(), changes)), json_values)
send_params_shapes = st.one_of(
    st.fixed_dictionaries({"message": message_shapes}),
    st.fixed_dictionaries({}, optional={
        "message": message_shapes, "configuration": json_values,
        "metadata": json_values, "tenant": st.sampled_from(["", "t"])}),
    json_values)


def _send_schemas():
    from a2a_flask.messages import StoredMessageSchema
    from a2a_flask.protocol.v03.schemas import MESSAGE_SEND_PARAMS
    from a2a_flask.protocol.v10.schemas import SEND_MESSAGE, MessageSchema
    return [(StoredMessageSchema(), MESSAGE_SEND_PARAMS), (MessageSchema(), SEND_MESSAGE)]


@settings(max_examples=2000, deadline=None)
@given(send_params_shapes)
@example({"message": {"role": "user", "messageId": "m", "parts": 1}})
@example({"message": {"role": "ROLE_USER", "messageId": "m", "parts": 1}})
@example({"message": {"role": "user", "messageId": "m", "parts": []}})
@example({"message": {"role": "ROLE_USER", "messageId": "m", "parts": []}})
def test_a_plain_message_read_without_the_schema_is_what_the_schema_loads(params):
    # message/send and SendMessage skip their schemas' load for a message of
    # text parts with its ids, alone in the params or not: each shortcut must
    # take only what its schema takes as it is, and read it alike, members in
    # the same order (they are stored as read).
    from marshmallow import Schema
    for message_schema, params_schema in _send_schemas():
        readings = [(message_schema, params.get("message") if isinstance(params, dict)
                     else None), (params_schema, params)]
        for schema, data in readings:
            common = schema.shortcut(data)
            if common is None:
                continue
            loaded = Schema.load(schema, data)  # raises if refused
            assert common == loaded
            inner = common.get("message", common)
            assert list(inner) == list(loaded.get("message", loaded))


def test_a_plain_send_takes_the_shortcut(monkeypatch):
    from marshmallow import Schema

    def no_load(*args, **kwargs):
        raise AssertionError("loaded by the schema")
    sent = [{"kind": "message", "role": "user", "messageId": "m", "contextId": "c",
             "parts": [{"kind": "text", "text": "hi"}, {"kind": "text", "text": "there"}]},
            {"role": "ROLE_USER", "messageId": "m", "taskId": "t",
             "parts": [{"text": "hi"}]}]
    monkeypatch.setattr(Schema, "load", no_load)
    for (message_schema, params_schema), plain_message in zip(_send_schemas(), sent):
        assert params_schema.load({"message": plain_message}) == {"message": plain_message}
        assert message_schema.load(plain_message) == plain_message
