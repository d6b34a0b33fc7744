"""How many bytes a stored message, artifact or task takes in an answer.

``rough_size`` is cheap (the strings of the parts, no JSON is written) and
used to keep the exact measure off the hot path: JSON escaping can make a
text at most six times longer (a control character as ``\\u0001``), so a
task whose rough size is under an eighth of a budget fits it. ``size`` is
exact: the length of the compact JSON.
"""

import json
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:  # pragma: no cover
    from .records import TaskRecord

#: Bytes counted per message, part or artifact for its members besides the
#: content (ids, kind, role...): generous, so that the rough size is not low.
OVERHEAD = 256
#: Bytes an answer's task counts besides its parts (as ``service.fit``).
FIXED_BYTES = OVERHEAD + 64
#: How much longer than its rough size an object's JSON may be.
ESCAPE_FACTOR = 6


def size(value: Any) -> int:
    """Bytes of ``value`` as compact UTF-8 JSON."""
    if value is None:
        return 0
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False)
               .encode("utf-8"))


def _rough_parts(parts) -> int:
    total = 0
    for part in parts or ():
        total += OVERHEAD
        text = part.get("text")
        if isinstance(text, str):
            total += len(text)
        file = part.get("file")
        if isinstance(file, dict):
            total += sum(len(v) for v in file.values() if isinstance(v, str))
        if part.get("data") is not None or part.get("metadata"):
            total += size({"d": part.get("data"), "m": part.get("metadata")})
    return total


def rough_size(item: Any) -> int:
    """A cheap measure of a stored message or artifact (see the module doc)."""
    if not item:
        return 0
    total = OVERHEAD + _rough_parts(item.get("parts"))
    if item.get("metadata"):
        total += size(item["metadata"])
    return total


def rough_task_size(record: "TaskRecord") -> int:
    """``rough_size`` of what an answer shows of a ``TaskRecord``."""
    total = OVERHEAD + rough_size(record.status_message)
    total += sum(rough_size(a) for a in record.artifacts or ())
    total += sum(rough_size(m) for m in record.history or ())
    if record.metadata:
        total += size(record.metadata)
    return total


def stored_artifact_bytes(body: str) -> int:
    """What an artifact stored as ``body`` (its JSON) counts against the
    artifacts a task may hold: its UTF-8 bytes and ``OVERHEAD`` (its id and
    the members a binding adds). The backends count the stored ones alike in
    SQL: ``length(CAST(body AS BLOB)) + OVERHEAD`` / ``octet_length``."""
    return len(body.encode("utf-8")) + OVERHEAD


def most_messages(max_bytes: int, history_length: Optional[int] = None) -> int:
    """How many of a task's newest messages a read within ``max_bytes`` need
    size at most: each counts ``OVERHEAD`` at least."""
    most = max_bytes // OVERHEAD + 1
    return most if history_length is None else max(0, min(most, history_length))


def may_exceed(rough: int, budget: int) -> bool:
    """Whether something of this rough size may be over ``budget`` bytes."""
    return rough * ESCAPE_FACTOR > budget


#: Below this rough size a task is counted at ESCAPE_FACTOR times it, without
#: writing its JSON; above, its JSON is measured.
SMALL = 4096


def page_size(record: "TaskRecord") -> int:
    """Bytes a listed task counts against a page's budget: at least its
    JSON (exact for a large task, a bound for a small one)."""
    rough = rough_task_size(record)
    if rough <= SMALL:
        return rough * ESCAPE_FACTOR
    return OVERHEAD + (size(record.status_message)
                       + sum(size(a) for a in record.artifacts or ())
                       + sum(size(m) for m in record.history or ())
                       + size(record.metadata))
