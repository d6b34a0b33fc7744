"""Count the files of ``a2a_flask/`` one call runs through (issue 30's
"rooms"): every file of the package whose function is called while the WSGI
app answers one 0.3 ``message/send`` and one ``tasks/get`` of the demo's
``echo`` agent on a fresh SQLite database, warm (after a first call of each).

    python tools/rooms.py [--list | --functions]

Run from the repository root (its ``wsgi.py`` and ``a2a_flask`` are measured).
Threads started during the call are traced too (``threading.setprofile``).
"""

import io
import json
import os
import subprocess
import sys
import tempfile
import threading

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
PACKAGE = os.path.join(ROOT, "a2a_flask") + os.sep
PATH = "/api/v1/agents/echo/a2a"
#: With ``--functions``: every (file, function) called, printed per file.
FUNCTIONS = {""} if "--functions" in sys.argv else set()


def _environ(body, key):
    body = body.encode()
    return {
        "REQUEST_METHOD": "POST", "PATH_INFO": PATH, "SCRIPT_NAME": "",
        "QUERY_STRING": "", "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1", "HTTP_HOST": "127.0.0.1:8000",
        "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(body)),
        "HTTP_AUTHORIZATION": "Bearer " + key, "REMOTE_ADDR": "127.0.0.1",
        "wsgi.input": io.BytesIO(body), "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr, "wsgi.multithread": True,
        "wsgi.multiprocess": True, "wsgi.run_once": False, "wsgi.version": (1, 0)}


def _call(app, body, key):
    status = []
    answer = app(_environ(body, key), lambda s, h, e=None: status.append(s))
    data = b"".join(answer)
    if hasattr(answer, "close"):
        answer.close()
    if not status[0].startswith("200"):
        raise SystemExit("rooms: %s %s" % (status[0], data[:300]))
    return json.loads(data)


def _traced(app, body, key):
    seen = set()

    def profile(frame, event, arg):
        name = frame.f_code.co_filename
        if event == "call" and name.startswith(PACKAGE):
            seen.add(os.path.relpath(name, ROOT))
            if FUNCTIONS:
                FUNCTIONS.add("%s:%s" % (os.path.relpath(name, ROOT),
                                         frame.f_code.co_name))

    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        _call(app, body, key)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    return sorted(seen)


def main():
    sys.path.insert(0, ROOT)
    tmp = tempfile.mkdtemp(prefix="rooms-")
    os.environ["A2A_DATABASE"] = os.path.join(tmp, "rooms.sqlite3")
    os.environ.setdefault("A2A_IN_PROCESS_WORKER", "0")
    key = subprocess.run(
        [sys.executable, "-m", "flask", "--app", "wsgi", "a2a", "keys", "create",
         "--agents", "*", "--quiet"], cwd=ROOT, check=True, capture_output=True,
        text=True).stdout.split()[-1]
    import wsgi
    send = ('{"jsonrpc":"2.0","id":1,"method":"message/send","params":'
            '{"message":{"kind":"message","role":"user","messageId":"%s",'
            '"parts":[{"kind":"text","text":"hello"}]}}}')
    task = _call(wsgi.app, send % "m-warm", key)["result"]["id"]
    get = '{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"%s"}}' % task
    _call(wsgi.app, get, key)
    for label, body in (("message/send", send % "m-traced"), ("tasks/get", get)):
        files = _traced(wsgi.app, body, key)
        print("%-13s %3d files" % (label, len(files)))
        if "--list" in sys.argv or FUNCTIONS:
            for name in files:
                called = sorted(f.split(":")[1] for f in FUNCTIONS
                                if f.startswith(name + ":"))
                print("    " + name + ("  " + " ".join(called) if called else ""))
        FUNCTIONS.intersection_update({""})


if __name__ == "__main__":
    main()
