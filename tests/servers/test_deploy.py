"""The files in deploy/: in step with the settings, and the nginx site really
answering JSON for its own refusals in front of gunicorn (when nginx is
installed: ``apt-get install nginx``; skipped otherwise)."""

import os
import re
import shutil
import signal
import subprocess
import time

import pytest
import requests

from a2a_flask.config import DEFAULTS
from serving import REPO_DIR, free_port

DEPLOY = os.path.join(REPO_DIR, "deploy")


def _read(name):
    with open(os.path.join(DEPLOY, name), encoding="utf-8") as f:
        return f.read()


def test_body_limits_in_step():
    limit = DEFAULTS["A2A_MAX_CONTENT_LENGTH"]
    site = re.search(r"client_max_body_size (\d+)m;", _read("nginx-a2a.conf"))
    assert int(site.group(1)) * 1024 * 1024 == limit
    env = re.search(r"^A2A_MAX_CONTENT_LENGTH=(\d+)$", _read("a2a.env"), re.M)
    assert int(env.group(1)) == limit


def test_units_run_the_shipped_commands():
    assert "ExecStart=/srv/a2a/venv/bin/gunicorn wsgi:app\n" in _read("a2a.service")
    assert "a2a tasks prune\n" in _read("a2a-prune.service")
    assert "ExecStart=/srv/a2a/venv/bin/flask --app wsgi a2a worker " in _read(
        "a2a-worker.service")
    assert "OnCalendar=daily" in _read("a2a-prune.timer")
    backup = _read("a2a-backup.service")
    assert "a2a db backup" in backup and "a2a db check" in backup


NGINX_MAIN = """
pid {dir}/nginx.pid;
error_log {dir}/error.log;
events {{ worker_connections 64; }}
http {{
    access_log {dir}/access.log;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    include {dir}/site.conf;
}}
"""


@pytest.fixture
def nginx(tmp_path):
    """The shipped site on a free port, its upstream another free port:
    ``(nginx url, upstream port)``."""
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.path.exists(binary):
        pytest.skip("nginx is not installed")
    port, upstream = free_port(), free_port()
    site = _read("nginx-a2a.conf")
    site = site.replace("listen 80;", "listen 127.0.0.1:%d;" % port)
    site = site.replace("listen [::]:80;\n", "")
    site = site.replace("127.0.0.1:8000", "127.0.0.1:%d" % upstream)
    (tmp_path / "site.conf").write_text(site)
    (tmp_path / "nginx.conf").write_text(NGINX_MAIN.format(dir=tmp_path))
    conf = str(tmp_path / "nginx.conf")
    checked = subprocess.run([binary, "-t", "-c", conf], capture_output=True,
                             text=True, timeout=30)
    assert checked.returncode == 0, checked.stderr
    subprocess.run([binary, "-c", conf], check=True, timeout=30)
    url = "http://127.0.0.1:%d" % port
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(str(tmp_path / "nginx.pid")):
            assert time.monotonic() < deadline, "nginx did not start"
            time.sleep(0.05)
        yield url, upstream
    finally:
        pid = int((tmp_path / "nginx.pid").read_text())
        os.kill(pid, signal.SIGQUIT)


def _json_error(response, status, code):
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"] == "application/json"
    assert response.json()["error"]["code"] == code


def test_nginx_site_refuses_in_json_and_proxies(nginx, start_server):
    url, upstream = nginx
    # Nobody upstream yet: nginx's own 502, as JSON.
    _json_error(requests.get(url + "/api/v1/health", timeout=10), 502, -32603)
    limit = DEFAULTS["A2A_MAX_CONTENT_LENGTH"]
    _json_error(requests.post(url + "/a2a", data=b"x" * (limit + 1), timeout=10),
                413, -32600)
    _json_error(requests.get(url + "/" + "a" * 40000, timeout=10), 414, -32600)
    _json_error(requests.get(url + "/a2a", headers={"X-Big": "a" * 20000},
                             timeout=10), 431, -32600)

    server = start_server("wsgi:app", workers=2,
                          gunicorn_args=["--bind", "127.0.0.1:%d" % upstream])
    health = requests.get(url + "/api/v1/health", timeout=10)
    assert health.status_code == 200 and health.json()["database"] == "ok"
    answer = requests.post(url + "/api/v1/agents/echo/a2a", headers=server.headers,
                           json={"jsonrpc": "2.0", "id": 3, "method": "message/send",
                                 "params": {"message": {
                                     "kind": "message", "role": "user",
                                     "messageId": "m-nginx",
                                     "parts": [{"kind": "text", "text": "hi"}]}}},
                           timeout=30).json()
    assert answer["result"]["status"]["state"] == "completed"
