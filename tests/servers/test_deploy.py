"""The files in deploy/: in step with the settings, and the nginx site really
answering JSON for its own refusals in front of gunicorn (when nginx is
installed: ``apt-get install nginx``; skipped otherwise)."""

import os
import sqlite3
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
    site = re.search(r"client_max_body_size (\d+)m;", _read("nginx-a2a-proxy.conf"))
    assert int(site.group(1)) * 1024 * 1024 == limit
    env = re.search(r"^A2A_MAX_CONTENT_LENGTH=(\d+)$", _read("a2a.env"), re.M)
    assert int(env.group(1)) == limit


def test_units_run_the_shipped_commands():
    assert "ExecStart=/srv/a2a/venv/bin/gunicorn wsgi:app\n" in _read("a2a.service")
    assert "a2a tasks prune\n" in _read("a2a-prune.service")
    # FLASK_APP, not --app, which Flask < 2.2 lacks (docs/compatibility.md).
    assert "ExecStart=/srv/a2a/venv/bin/flask a2a worker " in _read("a2a-worker.service")
    assert re.search(r"^FLASK_APP=wsgi$", _read("a2a.env"), re.M)
    for unit in ("a2a-worker.service", "a2a-prune.service", "a2a-backup.service"):
        assert "--app" not in _read(unit)
        assert "EnvironmentFile=/etc/a2a/a2a.env" in _read(unit)
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


def start_nginx(tmp_path, site_name, replacements=()):
    """``site_name`` of deploy/ (with the snippet it includes) on a free port,
    its upstream another free port; yields ``(port, upstream port)``.
    ``replacements``: (old, new) pairs applied to the site first."""
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.path.exists(binary):
        pytest.skip("nginx is not installed")
    tmp_path.mkdir(exist_ok=True)
    port, upstream = free_port(), free_port()
    site = _read(site_name)
    for old, new in replacements:
        assert old in site, old
        site = site.replace(old, new % {"port": port} if "%(port)" in new else new)
    site = site.replace("127.0.0.1:8000", "127.0.0.1:%d" % upstream)
    site = site.replace("/etc/nginx/snippets/a2a-proxy.conf",
                        str(tmp_path / "a2a-proxy.conf"))
    (tmp_path / "a2a-proxy.conf").write_text(_read("nginx-a2a-proxy.conf"))
    (tmp_path / "site.conf").write_text(site)
    (tmp_path / "nginx.conf").write_text(NGINX_MAIN.format(dir=tmp_path))
    conf = str(tmp_path / "nginx.conf")
    checked = subprocess.run([binary, "-t", "-c", conf], capture_output=True,
                             text=True, timeout=30)
    assert checked.returncode == 0, checked.stderr
    subprocess.run([binary, "-c", conf], check=True, timeout=30)
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(str(tmp_path / "nginx.pid")):
            assert time.monotonic() < deadline, "nginx did not start"
            time.sleep(0.05)
        yield port, upstream
    finally:
        pid = int((tmp_path / "nginx.pid").read_text())
        os.kill(pid, signal.SIGQUIT)


@pytest.fixture
def nginx(tmp_path):
    """The shipped site on a free port: ``(nginx url, upstream port)``."""
    for port, upstream in start_nginx(tmp_path, "nginx-a2a.conf", [
            ("listen 80;", "listen 127.0.0.1:%(port)d;"), ("listen [::]:80;\n", "")]):
        yield "http://127.0.0.1:%d" % port, upstream


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


# -- client certificates: nginx-a2a-mtls.conf, real certificates from openssl ----


def _openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True, timeout=60,
                   capture_output=True)


def _ca(directory, name):
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key",
             "-out", name + ".pem", "-days", "2", "-subj", "/CN=" + name, cwd=directory)


def _client_cert(directory, name, subject, ca):
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key",
             "-out", name + ".csr", "-subj", subject, cwd=directory)
    _openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem", "-CAkey",
             ca + ".key", "-CAcreateserial", "-out", name + ".pem", "-days", "2",
             cwd=directory)
    return (str(directory / (name + ".pem")), str(directory / (name + ".key")))


@pytest.fixture
def certificates(tmp_path):
    """A server certificate for 127.0.0.1, a client CA, a client certificate
    it signed, and one signed by another CA: ``{name: path or (cert, key)}``."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    directory = tmp_path / "pki"
    directory.mkdir()
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key",
             "-out", "server.pem", "-days", "2", "-subj", "/CN=127.0.0.1",
             "-addext", "subjectAltName=IP:127.0.0.1", cwd=directory)
    _ca(directory, "client-ca")
    _ca(directory, "rogue-ca")
    return {"server": str(directory / "server.pem"),
            "server_key": str(directory / "server.key"),
            "client_ca": str(directory / "client-ca.pem"),
            "billing": _client_cert(directory, "billing", "/O=Example/CN=billing",
                                    "client-ca"),
            "rogue": _client_cert(directory, "rogue", "/O=Example/CN=billing",
                                  "rogue-ca")}


def test_mtls_site_passes_only_a_verified_subject(tmp_path, certificates, start_server):
    certs = certificates
    site = [("listen 443 ssl;", "listen 127.0.0.1:%(port)d ssl;"),
            ("listen [::]:443 ssl;\n", ""),
            ("/etc/letsencrypt/live/a2a.example.com/fullchain.pem", certs["server"]),
            ("/etc/letsencrypt/live/a2a.example.com/privkey.pem", certs["server_key"]),
            ("/etc/nginx/a2a-client-ca.pem", certs["client_ca"])]
    for port, upstream in start_nginx(tmp_path / "nginx", "nginx-a2a-mtls.conf", site):
        server = start_server("wsgi:app", workers=2, auth="key",
                              env={"A2A_MTLS_HEADER": "X-A2A-Client-Subject"},
                              gunicorn_args=["--bind", "127.0.0.1:%d" % upstream])
        url = "https://127.0.0.1:%d/api/v1/agents/echo" % port

        def send(cert=None, headers=None):
            body = {"jsonrpc": "2.0", "id": 1, "method": "message/send",
                    "params": {"message": {"kind": "message", "role": "user",
                                           "messageId": os.urandom(8).hex(),
                                           "parts": [{"kind": "text", "text": "hi"}]}}}
            # B023: send and owner are called within their own iteration.
            return requests.post(url + "/a2a", json=body, cert=cert, headers=headers,  # noqa: B023
                                 verify=certs["server"], timeout=30)

        def owner(answer):
            task_id = answer.json()["result"]["id"]
            with sqlite3.connect(server.database) as db:  # noqa: B023
                return db.execute("SELECT owner FROM a2a_tasks WHERE id = ?",
                                  (task_id,)).fetchone()[0]

        forged = {"X-A2A-Client-Subject": "CN=admin,O=Example"}
        verified = send(certs["billing"])
        assert verified.status_code == 200, verified.text
        assert owner(verified) == "mtls:CN=billing,O=Example"
        # A subject header a client sends is replaced by the verified one...
        assert owner(send(certs["billing"], forged)) == "mtls:CN=billing,O=Example"
        # ...and dropped without a certificate: no caller at all.
        anonymous = send(headers=forged)
        assert anonymous.status_code == 401
        # A certificate of another CA (the same subject) stops at nginx, as JSON.
        rogue = send(certs["rogue"])
        assert rogue.status_code == 401 and rogue.json()["code"] == -32600
        assert "certificate" in rogue.json()["message"]
        # Keys work beside certificates, and win over one.
        keyed = send(headers=server.headers)
        assert keyed.status_code == 200 and owner(keyed).startswith("key:")
        assert owner(send(certs["billing"], server.headers)).startswith("key:")
        # The card declares the scheme, in both versions' forms.
        card = requests.get(url + "/.well-known/agent-card.json",
                            verify=certs["server"], timeout=30).json()
        assert card["securitySchemes"]["mtls"]["type"] == "mutualTLS"
        assert "mtlsSecurityScheme" in card["securitySchemes"]["mtls"]
        assert {"mtls": []} in card["security"]
