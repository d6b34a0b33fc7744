"""CPU per call in one process, without sockets or gunicorn: the Flask test
client drives ``message/send`` and ``tasks/get`` of the demo service
(``wsgi.py``, echo agent, auth on with a key from ``flask a2a keys create``)
on a fresh database, and prints the process CPU time per call. Load-independent
(CPU time, not wall time), so comparable on a busy machine; the minimum of a
few repeats is reported.

    python bench/inproc.py [-n 2000] [--repeat 3] [--profile send|get]

Run from the repository whose ``wsgi.py`` and ``a2a_flask`` to measure (the
current directory comes first on ``sys.path``).
"""

import argparse
import cProfile
import itertools
import os
import pstats
import sys
import tempfile
import time

PATH = "/api/v1/agents/echo/a2a"


def build(tmp):
    os.environ["A2A_DATABASE"] = os.path.join(tmp, "inproc.sqlite3")
    os.environ.pop("A2A_AUTH", None)
    sys.path.insert(0, os.getcwd())
    import wsgi

    out = wsgi.app.test_cli_runner().invoke(
        args=["a2a", "keys", "create", "--agents", "*", "--quiet"])
    key = [ln for ln in out.output.splitlines() if ln.strip()][-1].strip()
    return wsgi.app, {"Authorization": "Bearer " + key,
                      "Content-Type": "application/json"}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", choices=("send", "get"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        app, headers = build(tmp)
        client = app.test_client()
        counter = itertools.count()
        nonce = "%x" % os.getpid()

        def send():
            body = ('{"jsonrpc":"2.0","id":1,"method":"message/send","params":'
                    '{"message":{"kind":"message","role":"user","messageId":'
                    '"m-%s-%d","parts":[{"kind":"text","text":"hello"}]}}}'
                    % (nonce, next(counter)))
            r = client.post(PATH, data=body, headers=headers)
            assert r.status_code == 200 and b'"completed"' in r.data, r.data
            return r

        ids = [send().get_json()["result"]["id"] for _ in range(100)]
        bodies = ['{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":'
                  '{"id":"%s"}}' % i for i in ids]
        pool = itertools.cycle(bodies)

        def get():
            r = client.post(PATH, data=next(pool), headers=headers)
            assert r.status_code == 200 and b'"completed"' in r.data, r.data
            return r

        calls = {"send": send, "get": get}
        if args.profile:
            func = calls[args.profile]
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(args.n):
                func()
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(40)
            return
        for name, func in calls.items():
            best = None
            for _ in range(args.repeat):
                start = time.process_time()
                for _ in range(args.n):
                    func()
                per = (time.process_time() - start) / args.n * 1e6
                best = per if best is None else min(best, per)
            print("%s: %.0f us CPU per call (best of %d x %d)"
                  % (name, best, args.repeat, args.n))


if __name__ == "__main__":
    main()
