"""No two public classes of the package share a name: a reader (and an
``except``) meeting ``TaskNotFoundError`` or ``ApiKey`` finds one class.
Mirrors excepted, listed: the same class written once per storage backend,
per protocol version, or per HTTP transport of the client."""

import ast
import collections
import importlib
import inspect
import pkgutil
import subprocess
import sys

import a2a_flask

#: name -> the modules that each define it, by design one per backend,
#: version or transport.
MIRRORS = {
    "AdminOperations": {"a2a_flask.storage.sqlite.admin", "a2a_flask.storage.postgres.admin"},
    "CredentialOperations": {"a2a_flask.storage.sqlite.credentials",
                             "a2a_flask.storage.postgres.credentials"},
    "QueueOperations": {"a2a_flask.storage.sqlite.queue", "a2a_flask.storage.postgres.queue"},
    "TaskOperations": {"a2a_flask.storage.sqlite.tasks", "a2a_flask.storage.postgres.tasks"},
    "OutcomeWrites": {"a2a_flask.storage.sqlite.outcomes", "a2a_flask.storage.postgres.outcomes"},
    "DashboardOperations": {"a2a_flask.storage.sqlite.dashboard",
                            "a2a_flask.storage.postgres.dashboard"},
    "TaskReads": {"a2a_flask.storage.sqlite.reading", "a2a_flask.storage.postgres.reading"},
    "SendConfigurationSchema": {"a2a_flask.protocol.v03.schemas",
                                "a2a_flask.protocol.v10.schemas"},
    # The standard library's stand-in for urllib3's, without the extra.
    "Http": {"a2a_flask.client.transport", "a2a_flask.client.stdlib_transport"},
}


def public_classes():
    """name -> the modules defining a public class of that name."""
    found = collections.defaultdict(set)
    for module_info in pkgutil.walk_packages(a2a_flask.__path__, "a2a_flask."):
        if module_info.name.endswith("__main__"):
            continue
        module = importlib.import_module(module_info.name)
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and not name.startswith("_") \
                    and obj.__module__ == module.__name__:
                found[name].add(module.__name__)
    return found


def test_no_two_public_classes_share_a_name():
    shared = {name: modules for name, modules in public_classes().items()
              if len(modules) > 1}
    assert {name: modules for name, modules in shared.items()
            if MIRRORS.get(name) != modules} == {}


def test_the_mirrors_listed_still_exist():
    # A mirror that went (or moved) is taken off the list, not left to
    # excuse a new name.
    found = public_classes()
    assert {name: found.get(name) for name in MIRRORS} == MIRRORS


IMPORTS = r'''
import sys

import a2a_flask.client
import a2a_flask.config
loaded = {"flask": "flask" in sys.modules, "service": "a2a_flask.service" in sys.modules}
from a2a_flask import *  # noqa: F403
names = {name: getattr(a2a_flask, name).__module__.split(".")[0]
         for name in a2a_flask.__all__}
try:
    a2a_flask.Nothing
except AttributeError as e:
    missing = str(e)
print(repr((loaded, names, A2A.__name__, missing)))  # noqa: F405
'''


def test_the_package_loads_flask_only_for_a_name_that_needs_it():
    # A script using the client, and the gunicorn master reading the
    # settings, import parts of the package: they must not load Flask and
    # the service with it (about 18 MB and 140 ms for the client).
    out = subprocess.run([sys.executable, "-c", IMPORTS], capture_output=True,
                         text=True, check=True).stdout
    loaded, names, a2a, missing = ast.literal_eval(out)
    assert loaded == {"flask": False, "service": False}
    assert names == {name: "a2a_flask" for name in a2a_flask.__all__}
    assert a2a == "A2A"
    assert missing == "module 'a2a_flask' has no attribute 'Nothing'"
