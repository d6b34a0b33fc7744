"""Keep Alembic (Flask-Migrate) away from the service's tables.

With ``A2A_DATABASE`` on the host app's own SQLite file, Alembic's
autogenerate sees the ``a2a_`` tables, finds them in no model, and proposes to
drop them. Pass ``alembic_include_object`` as ``include_object`` to leave them
alone; this module does not import Alembic.
"""

from typing import Any, Optional

#: Every table and index of the service is named with this prefix.
TABLE_PREFIX = "a2a_"


def alembic_include_object(object: Any, name: Optional[str], type_: str,
                           reflected: bool, compare_to: Any) -> bool:
    """Alembic's ``include_object`` hook: False for the service's own tables
    and everything on them (columns, indexes, constraints)."""
    if type_ == "table":
        table_name = name
    else:
        table_name = getattr(getattr(object, "table", None), "name", None)
        if type_ == "index" and (name or "").startswith(TABLE_PREFIX):
            return False
    return not (table_name or "").startswith(TABLE_PREFIX)
