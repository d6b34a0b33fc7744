"""The virtualenv of the newest official SDK, a2a-sdk 1.3.x (A2A 1.0), for its PEER rows.

a2a-sdk 1.x cannot share a venv with the 0.3.x of the ``bench`` and ``test``
extras, so its server (``servers/peer13.py``) runs under the interpreter of a
venv of its own, ``bench/.cache/sdk13`` (``--sdk13-venv`` to put it
elsewhere), created on first use by the benchmark or beforehand with:

    python bench/sdk13.py            # create or update it, print its python
"""

import os
import subprocess
import sys

from processes import HERE, log

REQUIREMENTS = ["a2a-sdk[http-server,sqlite,postgresql]>=1.3,<1.4", "uvicorn>=0.30"]
DEFAULT_VENV = os.path.join(HERE, ".cache", "sdk13")


def python_of(venv):
    return os.path.join(venv, "bin", "python")


def installed_version(venv):
    """The a2a-sdk version in ``venv``, or None."""
    py = python_of(venv)
    if not os.access(py, os.X_OK):
        return None
    r = subprocess.run([py, "-c", "import importlib.metadata as m; print(m.version('a2a-sdk'))"],
                       capture_output=True, text=True, timeout=60)
    return r.stdout.strip() if r.returncode == 0 else None


def ensure(venv=DEFAULT_VENV):
    """The python of a venv holding a2a-sdk 1.3.x; creates it when missing."""
    version = installed_version(venv)
    if version and version.startswith("1.3."):
        return python_of(venv), version
    log(f"sdk13: creating {venv} with {' '.join(REQUIREMENTS)} (once)")
    subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=300)
    r = subprocess.run([python_of(venv), "-m", "pip", "install", "-q"] + REQUIREMENTS,
                       capture_output=True, text=True, timeout=900)
    version = installed_version(venv)
    if r.returncode != 0 or not (version or "").startswith("1.3."):
        raise RuntimeError(f"could not install a2a-sdk 1.3 into {venv}: {r.stderr[-1500:]}")
    return python_of(venv), version


if __name__ == "__main__":
    py, v = ensure(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_VENV)
    print(f"{py} (a2a-sdk {v})")
