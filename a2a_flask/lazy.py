"""Names of a package imported on first use (PEP 562): the package's
``__init__`` hands them on without loading what defines them."""

import importlib
from typing import Any, Callable, Dict


def lazy_names(package: str, names: Dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that takes each of ``names``
    from its submodule (``{"Client": "client"}``) on first use."""
    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError("module %r has no attribute %r" % (package, name))
        return getattr(importlib.import_module("." + module, package), name)
    return __getattr__
