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
import subprocess
import sys

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf.descriptor import FieldDescriptor

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = os.path.join(HERE, "a2a.proto")
PACKAGE = "lf.a2a.v1"
CACHE = os.path.join(os.path.expanduser("~"), ".cache", "a2a_flask-tests")

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
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    out = os.path.join(CACHE, f"proto-{digest}", "a2a.pb")
    if os.path.exists(out):
        return out
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = f"{out}.{os.getpid()}"
    args = ["grpc_tools.protoc", f"-I{HERE}"] + [f"-I{d}" for d in _include_dirs()] + [
        "--include_imports", f"--descriptor_set_out={tmp}", PROTO]
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
    """The message class of ``name`` (``Task`` or ``lf.a2a.v1.Task``)."""
    full = name if "." in name else f"{PACKAGE}.{name}"
    return message_factory.GetMessageClass(pool().FindMessageTypeByName(full))


def _repeated(field):
    # protobuf 5.28+ has is_repeated; older ones only the label
    if hasattr(field, "is_repeated"):
        return field.is_repeated
    return field.label == FieldDescriptor.LABEL_REPEATED


def _strict(descriptor, obj, path):
    """Keys must be JSON names, enums must be names: what ParseDict lets pass."""
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
