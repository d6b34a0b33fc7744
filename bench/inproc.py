"""CPU per call in one process, without sockets or gunicorn: each row's WSGI
app is called directly (``app(environ, start_response)``, as gunicorn calls
it, no test client) with ``message/send`` and ``tasks/get`` on a fresh
database, and the process CPU time per call is printed. Load-independent
(CPU time, not wall time), so comparable on a busy machine; the minimum of a
few repeats is reported.

US's records (an access record per call) go where the shipped
``gunicorn.conf.py`` sends them: the tree's own ``route_to_gunicorn`` hands
them to gunicorn's error log, here a file in the run's temporary folder. A
handler on the root logger would be a host's, which takes them through
``logging`` as usual: a slower path than production's (docs/benchmarks.md,
"The access record in the measure").

    python bench/inproc.py [--app us|floor|durable|ceiling] [-n 2000] [--repeat 3]
                           [--profile send|get]
    python bench/inproc.py --limit     # every app below, each in its own process
    python bench/inproc.py --auth      # US with an API key, then an OIDC token

``--limit`` prints the price of each requirement of the contract
(bench/README.md, "The limit"): CEILING, DURABLE CEILING with one and two
commits per send, FLOOR (``servers/floor.py``) with and without the key
lookup and the marshmallow validation, and US.

``--auth`` prints what a call costs with an API key (the bench's usual
caller) and with an OIDC access token (RS256, checked against the JWKS of a
throwaway OpenID provider on 127.0.0.1, tests/oidc_issuer.py), and the
difference: the token check per call (``BENCH_AUTH=token`` makes any run
use a token).

Run from the repository whose ``wsgi.py`` and ``a2a_flask`` to measure (the
current directory comes first on ``sys.path``).
"""

import argparse
import cProfile
import io
import itertools
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time

from processes import Auth

HERE = os.path.dirname(os.path.abspath(__file__))
US_PATH = "/api/v1/agents/echo/a2a"
#: The body of each message/send, its messageId's tail filled in (``%s``).
SEND = ('{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":'
        '{"kind":"message","role":"user","messageId":"m-%s","parts":'
        '[{"kind":"text","text":"hello"}]}}}')

#: (label, --app, extra environment) of ``--limit``, in the order printed.
LIMIT_ROWS = [
    ("CEILING", "ceiling", {}),
    ("DURABLE CEILING (1 commit per send)", "durable", {}),
    ("DURABLE CEILING, 2 commits per send", "durable", {"BENCH_WRITES": "2"}),
    ("FLOOR without key check, marshmallow", "floor", {"FLOOR_WITHOUT": "key,validation"}),
    ("FLOOR without the key check", "floor", {"FLOOR_WITHOUT": "key"}),
    ("FLOOR without marshmallow", "floor", {"FLOOR_WITHOUT": "validation"}),
    ("FLOOR", "floor", {}),
    ("US", "us", {}),
]
#: The rows of ``--auth``.
AUTH_ROWS = [
    ("US, API key", "us", {}),
    ("US, OIDC access token", "us", {"BENCH_AUTH": "token"}),
]


def build(which, tmp):
    """(WSGI app, path, key) of ``which``."""
    sys.path.insert(0, os.getcwd())
    if which in ("us", "floor"):
        db = os.path.join(tmp, "inproc.sqlite3")
        key = Auth.create_key(db)
        os.environ["A2A_DATABASE"] = db
        if which == "us":
            if os.environ.get("BENCH_AUTH") == "token":
                key = _oidc_token()
            _gunicorn_logs(tmp)
            import wsgi
            return wsgi.app, US_PATH, key
        sys.path.insert(0, os.path.join(HERE, "servers"))
        import floor
        return floor.app, "/rpc", key
    if which == "durable":
        os.environ["BENCH_DB"] = os.path.join(tmp, "durable.sqlite3")
    sys.path.insert(0, os.path.join(HERE, "servers"))
    import ceiling
    return ceiling.app, "/rpc", "unused"


def _gunicorn_logs(tmp):
    """The records of the tree measured routed as its gunicorn.conf.py routes
    them (``on_starting``): to gunicorn's error log, a file in ``tmp``."""
    from gunicorn.config import Config
    from gunicorn.glogging import Logger
    from a2a_flask.logs import route_to_gunicorn
    config = Config()
    config.set("errorlog", os.path.join(tmp, "error.log"))
    config.set("loglevel", "info")
    route_to_gunicorn(Logger(config).error_log, "plain")


def _oidc_token():
    """An access token of a throwaway OpenID provider (running until the
    process ends), the service set up to take its tokens."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
    from oidc_issuer import AUDIENCE, Issuer
    issuer = Issuer().start()
    os.environ.update(A2A_OIDC_ISSUER=issuer.url, A2A_OIDC_AUDIENCE=AUDIENCE)
    return issuer.token(sub="bench", lifetime=3600)


def caller(app, path, key):
    """A function posting a body to ``path`` of ``app``; returns the answer's bytes."""
    def call(body):
        body = body.encode()
        environ = {
            "REQUEST_METHOD": "POST", "PATH_INFO": path, "SCRIPT_NAME": "",
            "QUERY_STRING": "", "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8000",
            "SERVER_PROTOCOL": "HTTP/1.1", "HTTP_HOST": "127.0.0.1:8000",
            "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(body)),
            "HTTP_AUTHORIZATION": "Bearer " + key, "REMOTE_ADDR": "127.0.0.1",
            "wsgi.input": io.BytesIO(body), "wsgi.url_scheme": "http",
            "wsgi.errors": sys.stderr, "wsgi.multithread": False,
            "wsgi.multiprocess": True, "wsgi.run_once": False, "wsgi.version": (1, 0)}
        status = []
        answer = app(environ, lambda s, h, e=None: status.append(s))
        data = b"".join(answer)
        if hasattr(answer, "close"):
            answer.close()
        assert status[0].startswith("200") and b'"completed"' in data, data[:300]
        return data
    return call


def measure(which, n, repeat, profile):
    with tempfile.TemporaryDirectory() as tmp:
        call = caller(*build(which, tmp))
        counter = itertools.count()
        nonce = "%x" % os.getpid()

        def send():
            return call(SEND % ("%s-%d" % (nonce, next(counter))))

        ids = [json.loads(send())["result"]["id"] for _ in range(100)]
        pool = itertools.cycle(['{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":'
                                '{"id":"%s"}}' % i for i in ids])

        def get():
            return call(next(pool))

        calls = {"send": send, "get": get}
        if profile:
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(n):
                calls[profile]()
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(40)
            return None
        result = {}
        for name, func in calls.items():
            best = None
            for _ in range(repeat):
                start = time.process_time()
                for _ in range(n):
                    func()
                per = (time.process_time() - start) / n * 1e6
                best = per if best is None else min(best, per)
            result[name] = best
        return result


def limit(n, repeat, rows=LIMIT_ROWS):
    print("%-42s %10s %10s" % ("CPU per call in process", "send", "get"))
    measured = []
    for label, which, env in rows:
        out = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--app", which, "-n", str(n),
             "--repeat", str(repeat), "--json"],
            env=dict(os.environ, **env), check=True, capture_output=True, text=True).stdout
        got = json.loads(out.splitlines()[-1])
        measured.append(got)
        print("%-42s %8.0f us %8.0f us" % (label, got["send"], got["get"]))
    return measured


def first_checks(n, repeat):
    """CPU per check of a token seen for the first time (its signature
    verified; a token seen before costs a dictionary lookup)."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
    sys.path.insert(0, os.getcwd())
    from a2a_flask.config import Settings
    from a2a_flask.auth.oidc import TokenVerifier
    from oidc_issuer import AUDIENCE, Issuer
    with Issuer() as issuer:
        verifier = TokenVerifier(Settings({"A2A_OIDC_ISSUER": issuer.url,
                                           "A2A_OIDC_AUDIENCE": AUDIENCE}, HERE))
        best = None
        for _ in range(repeat):
            tokens = [issuer.token(sub="s%d" % i) for i in range(n)]
            verifier.claims(tokens[0])  # the keys fetched
            start = time.process_time()
            for token in tokens[1:]:
                verifier.claims(token)
            per = (time.process_time() - start) / (n - 1) * 1e6
            best = per if best is None else min(best, per)
    return best


def authenticate_alone(n, repeat):
    """CPU per ``authenticate`` of one request alone: an API key (looked up,
    then remembered), an access token (verified, then remembered)."""
    sys.path.insert(0, os.getcwd())
    with tempfile.TemporaryDirectory() as tmp:
        app, _, key = build("us", tmp)
        token = _oidc_token()
        from a2a_flask.auth.callers import authenticate
        from a2a_flask.config import Settings
        app_state = app.extensions["a2a"]
        # The app was made before the issuer: give it the token verifier now.
        from a2a_flask.auth.oidc import TokenVerifier
        app_state.tokens = TokenVerifier(Settings({
            name: os.environ[name] for name in ("A2A_OIDC_ISSUER",
                                                "A2A_OIDC_AUDIENCE")}, tmp))
        rows = {}
        for label, secret, remembered in (
                ("authenticate: an API key, looked up", key, False),
                ("authenticate: an API key, remembered", key, True),
                ("authenticate: a token seen before", token, False)):
            headers = {"Authorization": "Bearer " + secret}
            with app.test_request_context("/", headers=headers) as ctx:
                authenticate(app_state, ctx.request, remembered)  # warm
                best = None
                for _ in range(repeat):
                    start = time.process_time()
                    for _ in range(n):
                        authenticate(app_state, ctx.request, remembered)
                    per = (time.process_time() - start) / n * 1e6
                    best = per if best is None else min(best, per)
            rows[label] = best
    return rows


def auth(n, repeat):
    key, token = limit(n, repeat, AUTH_ROWS)
    print("%-42s %8.0f us %8.0f us" % ("the token check, beyond the key's",
                                       token["send"] - key["send"],
                                       token["get"] - key["get"]))
    print("%-42s %8.0f us" % ("a token's first check (RS256 signature)",
                              first_checks(min(n, 500), repeat)))
    for label, per in authenticate_alone(n, repeat).items():
        print("%-42s %8.1f us" % (label, per))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--app", choices=("us", "floor", "durable", "ceiling"), default="us")
    parser.add_argument("-n", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", choices=("send", "get"))
    parser.add_argument("--limit", action="store_true", help="every app, each in its own process")
    parser.add_argument("--auth", action="store_true",
                        help="an API key against an OIDC token, each in its own process")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.limit:
        limit(args.n, args.repeat)
        return None
    if args.auth:
        return auth(args.n, args.repeat)
    result = measure(args.app, args.n, args.repeat, args.profile)
    if result is None:
        return None
    if args.json:
        print(json.dumps(result))
        return None
    for name, per in result.items():
        print("%s: %.0f us CPU per call (best of %d x %d)" % (name, per, args.repeat, args.n))
    return None


if __name__ == "__main__":
    main()
