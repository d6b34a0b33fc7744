"""The 1.0 ProtoJSON validator (tests/v1/proto.py) accepts 1.0 shapes and
refuses 0.3 shapes, unknown fields, proto field names and enum numbers."""

import pytest

pytest.importorskip("grpc_tools")
pytest.importorskip("google.api")

from v1.proto import ProtoJSONError, validate  # noqa: E402

TASK = {
    "id": "t1",
    "contextId": "c1",
    "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2025-01-01T00:00:00Z"},
    "artifacts": [{"artifactId": "a1", "name": "echo", "parts": [{"text": "hello"}]}],
    "history": [{"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hello"}],
                 "taskId": "t1", "contextId": "c1", "metadata": {"k": [1, "x"]}}],
}


def test_a_1_0_task_is_valid():
    parsed = validate("Task", TASK)
    assert parsed.status.state == 3  # TASK_STATE_COMPLETED
    assert parsed.history[0].parts[0].text == "hello"


def test_full_names_and_response_wrappers():
    validate("lf.a2a.v1.SendMessageResponse", {"task": TASK})
    validate("ListTasksResponse", {"tasks": [TASK], "nextPageToken": "", "pageSize": 50,
                                   "totalSize": 1})


@pytest.mark.parametrize("bad, why", [
    ({**TASK, "status": {"state": "completed"}}, "Invalid enum value completed"),
    ({**TASK, "kind": "task"}, "no field named \"kind\""),
    ({**TASK, "history": [{"messageId": "m", "role": "user", "parts": []}]}, "Invalid enum value user"),
    ({**TASK, "artifacts": [{"artifactId": "a", "parts": [{"kind": "text", "text": "x"}]}]},
     "no field named \"kind\""),
    ({**TASK, "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "yesterday"}}, "timestamp"),
])
def test_0_3_shapes_and_unknown_fields_are_refused(bad, why):
    with pytest.raises(ProtoJSONError, match=why):
        validate("Task", bad)


def test_proto_field_names_are_refused_though_protojson_parsing_takes_them():
    with pytest.raises(ProtoJSONError, match=r"Task\.context_id: not the JSON name"):
        validate("Task", {"id": "t", "context_id": "c"})


def test_enum_numbers_are_refused_though_protojson_parsing_takes_them():
    with pytest.raises(ProtoJSONError, match=r"Task\.status\.state: enum lf\.a2a\.v1\.TaskState as 3"):
        validate("Task", {"id": "t", "status": {"state": 3}})
    with pytest.raises(ProtoJSONError, match=r"history\[0\]\.role"):
        validate("Task", {"id": "t", "history": [{"messageId": "m", "role": 1}]})


def test_unknown_message_name_is_an_error():
    with pytest.raises(KeyError):
        validate("NoSuchMessage", {})
