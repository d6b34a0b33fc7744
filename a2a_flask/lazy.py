"""Names imported on first use: a package's names (PEP 562), handed on by
its ``__init__`` without loading what defines them, and the commands of the
``flask a2a`` group."""

import importlib
from typing import Any, Callable, Dict


def imported(package: str, module: str, name: str) -> Any:
    """``name`` from ``package``'s submodule ``module``, imported now."""
    return getattr(importlib.import_module("." + module, package), name)


def lazy_names(package: str, names: Dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that takes each of ``names``
    from its submodule (``{"Client": "client"}``) on first use."""
    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError("module %r has no attribute %r" % (package, name))
        return imported(package, module, name)
    return __getattr__
