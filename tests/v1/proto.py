"""Check A2A 1.0 answers against the JSON form of the 1.0 proto (``a2a.proto``).

The proto is compiled at test time with grpcio-tools' protoc into a
descriptor set (``google/api/*.proto`` from googleapis-common-protos, the
well-known types from grpcio-tools), cached under
``~/.cache/a2a_flask-tests/proto-<hash>``. The messages live in a private
descriptor pool, so they never clash with the generated code of an a2a-sdk
(0.3's ``a2a.proto`` registers the same file name in the default pool).

``validate(name, obj)`` parses ``obj`` with ``json_format.ParseDict``
(unknown fields refused), then walks it once more because ProtoJSON parsing
is lenient where a server must not be: it accepts proto field names
(``context_id``) beside JSON names (``contextId``) and enum numbers beside
their names.
"""

import hashlib
import os
import sys

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf.descriptor import FieldDescriptor

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = os.path.join(HERE, "a2a.proto")
PACKAGE = "lf.a2a.v1"
CACHE = os.path.join(os.path.expanduser("~"), ".cache", "a2a_flask-tests")

# Error details of 1.0 errors (JSON-RPC ``error.data``, REST ``error.details``).
EXTRA_PROTOS = ["google/rpc/status.proto", "google/rpc/error_details.proto"]

# Well-known types whose JSON form is not an object of their fields.
_OPAQUE = {
    "google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue",
    "google.protobuf.Timestamp", "google.protobuf.Duration", "google.protobuf.Any",
    "google.protobuf.Empty", "google.protobuf.FieldMask",
} | {f"google.protobuf.{w}Value" for w in
     ("Bool", "Int32", "Int64", "UInt32", "UInt64", "Float", "Double", "String", "Bytes")}


class ProtoJSONError(AssertionError):
    """An object that is not the ProtoJSON form of the named 1.0 message."""


def _include_dirs():
    """Where protoc finds ``google/protobuf/*.proto`` and ``google/api/*.proto``."""
    import grpc_tools

    dirs = [os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")]
    for entry in sys.path:  # googleapis-common-protos ships its .proto files
        if os.path.isfile(os.path.join(entry or ".", "google", "api", "annotations.proto")):
            dirs.append(entry)
            break
    else:
        raise RuntimeError("google/api/annotations.proto not found:"
                           " pip install googleapis-common-protos")
    return dirs


def compile_descriptor_set():
    """Path of the compiled ``a2a.proto`` (with its imports), built once."""
    with open(PROTO, "rb") as f:
        digest = hashlib.sha256(f.read() + " ".join(EXTRA_PROTOS).encode()).hexdigest()[:16]
    out = os.path.join(CACHE, f"proto-{digest}", "a2a.pb")
    if os.path.exists(out):
        return out
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = f"{out}.{os.getpid()}"
    includes = _include_dirs()
    extra = [os.path.join(includes[-1], name) for name in EXTRA_PROTOS]
    args = ["grpc_tools.protoc", f"-I{HERE}"] + [f"-I{d}" for d in includes] + [
        "--include_imports", f"--descriptor_set_out={tmp}", PROTO] + extra
    from grpc_tools import protoc

    if protoc.main(args) != 0:
        raise RuntimeError(f"protoc failed on {PROTO}: {' '.join(args)}")
    os.replace(tmp, out)  # atomic: parallel sessions never read half a file
    return out


_pool = None


def pool():
    global _pool
    if _pool is None:
        files = descriptor_pb2.FileDescriptorSet()
        with open(compile_descriptor_set(), "rb") as f:
            files.ParseFromString(f.read())
        p = descriptor_pool.DescriptorPool()
        for file in files.file:
            p.Add(file)
        _pool = p
    return _pool


def message_class(name):
    """The message class of ``name`` (``Task``, ``lf.a2a.v1.Task``, ``google.rpc.Status``)."""
    full = name if "." in name else f"{PACKAGE}.{name}"
    return message_factory.GetMessageClass(pool().FindMessageTypeByName(full))


def _repeated(field):
    # protobuf 5.28+ has is_repeated; older ones only the label
    if hasattr(field, "is_repeated"):
        return field.is_repeated
    return field.label == FieldDescriptor.LABEL_REPEATED


def _strict(descriptor, obj, path):
    """Keys must be JSON names, enums must be names: what ParseDict lets pass."""
    if descriptor.full_name == "google.protobuf.Any" and isinstance(obj, dict) and "@type" in obj:
        inner = pool().FindMessageTypeByName(obj["@type"].rsplit("/", 1)[-1])
        _strict(inner, {k: v for k, v in obj.items() if k != "@type"}, path)
        return
    if descriptor.full_name in _OPAQUE or not isinstance(obj, dict):
        return
    by_json = {f.json_name: f for f in descriptor.fields}
    for key, value in obj.items():
        field = by_json.get(key)
        if field is None:
            raise ProtoJSONError(f"{path}.{key}: not the JSON name of a field of"
                                 f" {descriptor.full_name} (expected one of {sorted(by_json)})")
        if value is None:
            continue
        where = f"{path}.{key}"
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            items = [(f"{where}[{k!r}]", v) for k, v in value.items()]
            field = value_field
        elif _repeated(field) and isinstance(value, list):
            items = [(f"{where}[{i}]", v) for i, v in enumerate(value)]
        else:
            items = [(where, value)]
        for item_path, item in items:
            if field.enum_type is not None and not isinstance(item, str):
                raise ProtoJSONError(f"{item_path}: enum {field.enum_type.full_name} as"
                                     f" {item!r}, not by name")
            if field.message_type is not None:
                _strict(field.message_type, item, item_path)


def validate(message_name, obj):
    """Raise ProtoJSONError unless ``obj`` is the ProtoJSON of ``message_name``.

    Returns the parsed message (handy to read fields the proto way).
    """
    cls = message_class(message_name)
    try:
        parsed = json_format.ParseDict(obj, cls(), ignore_unknown_fields=False,
                                       descriptor_pool=pool())
    except (json_format.ParseError, TypeError, ValueError) as e:
        raise ProtoJSONError(f"not a valid {cls.DESCRIPTOR.full_name}: {e}\n  in {obj!r}") from None
    _strict(cls.DESCRIPTOR, obj, cls.DESCRIPTOR.name)
    return parsed


# A card that serves 0.3 and 1.0 clients (ours, the official SDK's compatible
# cards) carries the 0.3 members beside the 1.0 ones; a 1.0 reader ignores
# these and only these. Anything else unknown still fails.
CARD_03_MEMBERS = ("protocolVersion", "url", "preferredTransport",
                   "additionalInterfaces", "supportsAuthenticatedExtendedCard",
                   "security")
CAPABILITIES_03_MEMBERS = ("stateTransitionHistory",)
SCHEME_03_MEMBERS = ("type", "in", "name", "scheme", "description",
                     "bearerFormat", "openIdConnectUrl", "flows",
                     "oauth2MetadataUrl")


def card_without_03(card):
    """``card`` less the known 0.3 members (its 1.0 reading)."""
    card = {k: v for k, v in card.items() if k not in CARD_03_MEMBERS}
    if isinstance(card.get("capabilities"), dict):
        card["capabilities"] = {k: v for k, v in card["capabilities"].items()
                                if k not in CAPABILITIES_03_MEMBERS}
    if isinstance(card.get("securitySchemes"), dict):
        card["securitySchemes"] = {
            name: {k: v for k, v in scheme.items() if k not in SCHEME_03_MEMBERS}
            for name, scheme in card["securitySchemes"].items()}
    return card


def validate_card(card):
    """Raise unless ``card`` read the 1.0 way (0.3 members ignored) is an AgentCard."""
    return validate("AgentCard", card_without_03(card))


# What each 1.0 operation answers: JSON-RPC method -> message, REST route -> message.
RESULTS = {
    "SendMessage": "SendMessageResponse",
    "GetTask": "Task",
    "ListTasks": "ListTasksResponse",
    "CancelTask": "Task",
    "GetExtendedAgentCard": "AgentCard",
}


def _rest_operation(method, path):
    if path.endswith("/message:send"):
        return "SendMessage"
    if path.endswith(":cancel"):
        return "CancelTask"
    if path.endswith("/extendedAgentCard"):
        return "GetExtendedAgentCard"
    if path.endswith("/agent-card.json"):
        return "card"
    if method == "GET" and path.endswith("/tasks"):
        return "ListTasks"
    if method == "GET" and "/tasks/" in path:
        return "GetTask"
    return None


def validate_error_details(details, where):
    """1.0 error details: a list of ProtoJSON ``Any`` objects (``@type`` each)."""
    if not isinstance(details, list):
        raise ProtoJSONError(f"{where}: error details must be an array, not {details!r}")
    for i, detail in enumerate(details):
        if not isinstance(detail, dict) or "@type" not in detail:
            raise ProtoJSONError(f"{where}[{i}]: detail without @type: {detail!r}")
        validate("google.protobuf.Any", detail)


def check_exchange(record):
    """Validate one recorded HTTP exchange of a 1.0 client (the ``wire`` items
    of py_client.py / js_client.mjs: method, url, status, request, body).

    JSON-RPC: ``result`` as the method's message, ``error`` with an integer
    code and ``data`` (if any) as typed details. HTTP+JSON: the body of a 2xx
    as the route's message, an error as ``{"error": google.rpc.Status + status}``.
    Returns the operation name checked, or None when it is not one we know.
    """
    body, request = record["body"], record.get("request")
    if isinstance(request, dict) and request.get("jsonrpc") == "2.0":
        op = request.get("method")
        if not isinstance(body, dict) or body.get("jsonrpc") != "2.0" \
                or ("result" in body) == ("error" in body) or body.get("id") != request.get("id"):
            raise ProtoJSONError(f"{op}: not a JSON-RPC 2.0 answer to id {request.get('id')!r}: {body!r}")
        if "error" in body:
            error = body["error"]
            if not isinstance(error.get("code"), int) or not isinstance(error.get("message"), str):
                raise ProtoJSONError(f"{op}: error without integer code and message: {error!r}")
            if "data" in error:
                validate_error_details(error["data"], f"{op} error.data")
        elif op == "GetExtendedAgentCard":
            validate_card(body["result"])
        elif op in RESULTS:
            validate(RESULTS[op], body["result"])
        return op
    from urllib.parse import urlsplit

    op = _rest_operation(record["method"], urlsplit(record["url"]).path)
    if op in ("card", "GetExtendedAgentCard") and 200 <= record["status"] < 300:
        validate_card(body)
    elif op is None:
        return None
    elif 200 <= record["status"] < 300:
        validate(RESULTS[op], body)
    else:
        error = body.get("error") if isinstance(body, dict) else None
        if not isinstance(error, dict) or error.get("code") != record["status"]:
            raise ProtoJSONError(f"{op}: HTTP {record['status']} without an error object"
                                 f" carrying that code: {body!r}")
        status = {k: v for k, v in error.items() if k != "status"}  # the text form of the code
        if not isinstance(error.get("status", ""), str):
            raise ProtoJSONError(f"{op}: error.status must be a string: {error!r}")
        validate("google.rpc.Status", status)
    return op
