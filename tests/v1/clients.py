"""Real A2A 1.0 clients for the tests: the official Python SDK 1.x and JS SDK 1.x.

a2a-sdk 1.x cannot share the test venv (a2a-sdk 0.3 there), so each SDK is
installed once, beside the tests, in a cache keyed by its major version:

- ``~/.cache/a2a_flask-tests/py-a2a-sdk-1``: a venv with ``a2a-sdk[http-server]`` 1.x
  (and uvicorn, for the reference server ``sdk_server.py``);
- ``~/.cache/a2a_flask-tests/js-a2a-sdk-1``: ``npm install @a2a-js/sdk@^1``.

``A2A_TESTS_CACHE`` moves the cache. The first use installs (needs the
package registries, a minute or two); later runs and sessions reuse it; a
file lock keeps parallel sessions from installing twice. ``run_py`` and
``run_js`` run the scenario programs (``py_client.py``, ``js_client.mjs``)
and return ``{step: result}``; see README.md.
"""

import contextlib
import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.environ.get("A2A_TESTS_CACHE") or os.path.join(
    os.path.expanduser("~"), ".cache", "a2a_flask-tests")
# signing: PyJWT, for the SDK's card-signature verifier (verify_card.py).
PY_REQUIREMENTS = ["a2a-sdk[http-server,signing]>=1.3,<2", "uvicorn>=0.30"]
JS_PACKAGE = "@a2a-js/sdk@^1.3.0"
#: The 0.3 JS client, for the base-URL tests (js_client_03.mjs).
JS_PACKAGE_03 = "@a2a-js/sdk@~0.3.14"
#: What js_server.mjs needs besides the SDK (the SDK's peer dependency).
JS_SERVER_PACKAGES = ["express@^4.21.2"]
TRANSPORTS = ("jsonrpc", "rest")


@contextlib.contextmanager
def _locked(name):
    os.makedirs(CACHE, exist_ok=True)
    with open(os.path.join(CACHE, f".{name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _run(cmd, timeout, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr[-2000:]}")
    return r.stdout


def _py_sdk_version(python, probe="a2a"):
    """The a2a-sdk version in ``python``'s venv, None unless ``probe`` imports
    (1.x: ``a2a.utils.signing``, so a venv made before the signing extra was
    asked for is made again)."""
    if not os.access(python, os.X_OK):
        return None
    r = subprocess.run([python, "-c", f"import {probe}, importlib.metadata as m; "
                        "print(m.version('a2a-sdk'))"],
                       capture_output=True, text=True, timeout=60)
    return r.stdout.strip() if r.returncode == 0 else None


PY_03_REQUIREMENTS = ["a2a-sdk[http-server]==0.3.26", "uvicorn>=0.30"]
_py_sdks = {}


def _py_venv(name, requirements, major, probe="a2a"):
    """``(python, version)`` of the cached venv ``name`` holding a2a-sdk
    ``major``.x (``requirements`` installed on first use)."""
    if name not in _py_sdks:
        venv = os.path.join(CACHE, name)
        python = os.path.join(venv, "bin", "python")
        with _locked(name):
            version = _py_sdk_version(python, probe)
            if not (version or "").startswith(major):
                shutil.rmtree(venv, ignore_errors=True)
                _run([sys.executable, "-m", "venv", venv], 300)
                _run([python, "-m", "pip", "install", "-q"] + requirements, 900)
                version = _py_sdk_version(python, probe)
                if not (version or "").startswith(major):
                    raise RuntimeError(f"a2a-sdk {major}x not importable in {venv} after install")
        _py_sdks[name] = (python, version)
    return _py_sdks[name]


def py_sdk():
    """``(python, version)`` of the venv holding a2a-sdk 1.x; made on first use."""
    return _py_venv("py-a2a-sdk-1", PY_REQUIREMENTS, "1.", "a2a.utils.signing")


def py_sdk_03():
    """``(python, version)`` of the venv holding the a2a-sdk 0.3.26 server
    (the test venv has the 0.3 SDK without its ``http-server`` extra)."""
    return _py_venv("py-a2a-sdk-0.3", PY_03_REQUIREMENTS, "0.3.")


def node_missing():
    """Why the JS client cannot run here, or None."""
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    return f"{' and '.join(missing)} not installed: the JS SDK 1.x client needs them" \
        if missing else None


_js_sdk = None


def js_sdk(major="1"):
    """``(node_modules, version)`` of the cached npm install of @a2a-js/sdk
    1.x (``major="0.3"``: 0.3.x, in its own folder).

    Skips the calling test (clear reason) where node or npm is absent.
    """
    reason = node_missing()
    if reason:
        pytest.skip(reason)
    if major != "1":
        return _js_install("js-a2a-sdk-" + major, JS_PACKAGE_03, major + ".")
    global _js_sdk
    if _js_sdk is None:
        _js_sdk = _js_install("js-a2a-sdk-1", JS_PACKAGE, "1.", JS_SERVER_PACKAGES)
    return _js_sdk


def _js_install(name, package, prefix, extra=()):
    """``(node_modules, version)`` of ``package`` (and the ``extra``
    packages) installed once in CACHE/name."""
    folder = os.path.join(CACHE, name)
    manifest = os.path.join(folder, "node_modules", "@a2a-js", "sdk", "package.json")
    with _locked(name):
        if not os.path.exists(manifest):
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, "package.json"), "w") as f:
                json.dump({"private": True, "type": "module"}, f)
            _run(["npm", "install", "--no-audit", "--no-fund", "--silent", package], 900,
                 cwd=folder)
        if extra and not os.path.exists(os.path.join(folder, "node_modules", "express")):
            _run(["npm", "install", "--no-audit", "--no-fund", "--silent"] + list(extra),
                 900, cwd=folder)
        with open(manifest) as f:
            version = json.load(f)["version"]
    if not version.startswith(prefix):
        raise RuntimeError(f"{manifest}: @a2a-js/sdk {version}, expected {prefix}x")
    return os.path.join(folder, "node_modules"), version


def _parse_steps(stdout, program):
    results = {}
    for line in stdout.splitlines():
        if line.strip():
            item = json.loads(line)
            results[item["step"]] = item
    if not results:
        raise RuntimeError(f"{program} printed no step")
    return results


def _scenario_args(card_url, key, header, transport, steps, base_url=None):
    if transport not in TRANSPORTS:
        raise ValueError(f"transport must be one of {TRANSPORTS}, not {transport!r}")
    if not isinstance(steps, str):
        steps = ",".join(steps)
    where = ["--base-url", base_url] if base_url else ["--card-url", card_url]
    return where + ["--key", key or "", "--header", header,
                    "--transport", transport, "--step", steps]


def run_py(card_url, key=None, header="X-API-Key", transport="jsonrpc", steps="all", timeout=120,
           base_url=None, oidc_client=None):
    """Run py_client.py (Python SDK 1.x, native 1.0) and return ``{step: result}``;
    ``base_url`` (card_url None): the card found from it the SDK's default way.
    ``oidc_client`` ("ID:SECRET"): the SDK's AuthInterceptor sends an access
    token got from the OpenID provider the card names."""
    python, _ = py_sdk()
    cmd = [python, os.path.join(HERE, "py_client.py")] + _scenario_args(
        card_url, key, header, transport, steps, base_url)
    if oidc_client:
        cmd += ["--oidc-client", oidc_client]
    return _parse_steps(_run(cmd, timeout), "py_client.py")


def run_js(card_url, key=None, header="X-API-Key", transport="jsonrpc", steps="all", timeout=120,
           base_url=None):
    """Run js_client.mjs (JS SDK 1.x, no legacy switch) and return ``{step: result}``;
    ``base_url`` as for ``run_py``."""
    node_modules, _ = js_sdk()
    cmd = ["node", os.path.join(HERE, "js_client.mjs")] + _scenario_args(
        card_url, key, header, transport, steps, base_url)
    env = dict(os.environ, NODE_PATH=node_modules)
    return _parse_steps(_run(cmd, timeout, env=env), "js_client.mjs")


def verify_cards(cards, jwks, tmp_path):
    """``{"py": {label: result}, "js": {...}}``: each of ``cards`` ({label:
    card}) checked by the official Python and JS SDK 1.x signature
    verifiers (verify_card.py, verify_card.mjs) with the keys of ``jwks``;
    a result has ``ok`` and what the verifier read (``kid``, ``jku``)."""
    cards_file, jwks_file = tmp_path / "cards.json", tmp_path / "jwks.json"
    cards_file.write_text(json.dumps(cards))
    jwks_file.write_text(json.dumps(jwks))
    python, _ = py_sdk()
    node_modules, _ = js_sdk()
    py = _run([python, os.path.join(HERE, "verify_card.py"), "--cards", str(cards_file),
               "--jwks", str(jwks_file)], 120)
    js = _run(["node", os.path.join(HERE, "verify_card.mjs"), str(cards_file),
               str(jwks_file)], 120, env=dict(os.environ, NODE_PATH=node_modules))
    return {"py": json.loads(py), "js": json.loads(js)}


def verify_served_cards(base_url, paths, jwks_url, v10):
    """Each card at ``base_url`` + path fetched by the Python SDK 1.x's
    ``A2ACardResolver`` (``v10``: with ``A2A-Version: 1.0``) and verified
    with the keys at ``jwks_url``: ``{path: result}``."""
    python, _ = py_sdk()
    cmd = [python, os.path.join(HERE, "verify_card.py"), "--url", base_url,
           "--jwks-url", jwks_url] + [arg for path in paths for arg in ("--path", path)]
    return json.loads(_run(cmd + (["--v10"] if v10 else []), 120))


def run_js_03(base_urls, timeout=120):
    """Run js_client_03.mjs (JS SDK 0.3.x ``ClientFactory.createFromUrl``) on
    each base URL: ``{url: {"ok", "state" or "error", "fetched"}}``."""
    node_modules, _ = js_sdk("0.3")
    out = _run(["node", os.path.join(HERE, "js_client_03.mjs")] + list(base_urls), timeout,
               env=dict(os.environ, NODE_PATH=node_modules))
    return {item["base"]: item for item in
            (json.loads(line) for line in out.splitlines() if line.strip())}


def check_wire(results):
    """Check every recorded answer of ``results`` against the 1.0 proto;
    returns how many exchanges were checked per operation."""
    from .proto import check_exchange

    counts = {}
    for item in results.values():
        for record in item.get("wire", []):
            op = check_exchange(record)
            counts[op] = counts.get(op, 0) + 1
    return counts


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sign_with_py_sdk(card, private_pem, kid):
    """The ``signatures`` the official Python SDK 1.x signer makes for
    ``card`` (ES256, ``kid``) with the private key ``private_pem``."""
    python, _ = py_sdk()
    r = subprocess.run([python, os.path.join(HERE, "sign_card.py"), kid],
                       input=json.dumps(card), capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, SIGNING_KEY=private_pem))
    if r.returncode != 0:
        raise RuntimeError(f"sign_card.py failed: {r.stderr[-2000:]}")
    return json.loads(r.stdout)


@contextlib.contextmanager
def _serving(cmd, port, env=None):
    """Run ``cmd`` (a server on ``port``) until the block ends; yields the
    URL of its card at the host root."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True, env=env)
    url = f"http://127.0.0.1:{port}/.well-known/agent-card.json"
    try:
        deadline = time.monotonic() + 30
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{cmd[1]} did not start: {proc.stderr.read()[-2000:]}")
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stderr.close()


@contextlib.contextmanager
def sdk_server(key=None, header="X-API-Key", port=None, rest_prefix="/a2a/rest"):
    """The official SDK 1.x server of ``sdk_server.py`` (the reference the
    scenarios were proven against); yields its card URL."""
    python, _ = py_sdk()
    port = port or _free_port()
    cmd = [python, os.path.join(HERE, "sdk_server.py"), str(port), "--header", header,
           "--rest-prefix", rest_prefix] + (["--key", key] if key else [])
    with _serving(cmd, port) as url:
        yield url


@contextlib.contextmanager
def sdk03_server(key=None, header="X-API-Key", port=None):
    """The official SDK 0.3.26 server of ``sdk03_server.py``; yields its card URL."""
    python, _ = py_sdk_03()
    port = port or _free_port()
    cmd = [python, os.path.join(HERE, "sdk03_server.py"), str(port), "--header",
           header] + (["--key", key] if key else [])
    with _serving(cmd, port) as url:
        yield url


@contextlib.contextmanager
def js_server(key=None, header="X-API-Key", port=None, sign_jwk=None, kid="key-1"):
    """The official JS SDK 1.x server of ``js_server.mjs`` (``sign_jwk``: a
    private EC P-256 JWK (a dict) it signs its card with); yields its card URL."""
    node_modules, _ = js_sdk()
    port = port or _free_port()
    cmd = ["node", os.path.join(HERE, "js_server.mjs"), str(port), "--header", header]
    cmd += ["--key", key] if key else []
    cmd += ["--sign-jwk", json.dumps(sign_jwk), "--kid", kid] if sign_jwk else []
    with _serving(cmd, port, dict(os.environ, NODE_PATH=node_modules)) as url:
        yield url
