"""A throwaway OpenID provider on 127.0.0.1 for the tests: discovery, JWKS,
a client-credentials token endpoint and key rotation, its tokens real JWTs
signed with PyJWT (keys made with ``cryptography``).

    with Issuer() as issuer:
        token = issuer.token(sub="svc-a", scope="a2a.call")
        issuer.rotate()                        # a new signing key, published
        issuer.stop(); issuer.start()          # down, then up on the same port
        issuer.hold_jwks(); issuer.release_jwks()  # slow or silent, then not

``token(**claims)`` signs whatever the test asks (expired, another audience,
another key, no ``kid``...); ``POST /token`` (the client-credentials grant,
client id and secret by HTTP Basic or in the form) is what a real client
uses. ``jwks_fetches`` counts the JWKS reads, to prove the service caches.
``hold_jwks()`` makes the JWKS reads hang (``jwks_asked`` is set when one
arrives) until ``release_jwks()`` lets them be answered, or fail as timed out.
``jwks_body`` (bytes) replaces the JWKS answer, sent a byte every
``trickle_pause`` seconds when that is set: an oversized or trickling answer.
"""

import base64
import json
import secrets
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from serving import free_port

AUDIENCE = "https://agents.example/a2a"
#: A held JWKS read is let go after this long (seconds) even if no test does.
HOLD_LIMIT = 60.0
__all__ = ["AUDIENCE", "Issuer", "SigningKey", "free_port"]


class SigningKey:
    """A private key, its ``kid`` and algorithm; ``jwk()`` is its public half."""

    def __init__(self, alg="RS256", kid=None):
        self.alg = alg
        self.kid = kid or "k-" + secrets.token_hex(4)
        if alg.startswith("ES"):
            self.private = ec.generate_private_key(ec.SECP256R1())
            self._algorithm = jwt.algorithms.ECAlgorithm
        else:
            self.private = rsa.generate_private_key(public_exponent=65537,
                                                    key_size=2048)
            self._algorithm = jwt.algorithms.RSAAlgorithm

    def jwk(self):
        public = json.loads(self._algorithm.to_jwk(self.private.public_key()))
        public.update(kid=self.kid, use="sig", alg=self.alg)
        return public


class _Handler(BaseHTTPRequestHandler):
    issuer = None  # set per server

    def log_message(self, *args):
        pass

    def _json(self, status, payload):
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        issuer = self.server.issuer
        if self.path == "/.well-known/openid-configuration":
            issuer.discovery_fetches += 1
            return self._json(200, issuer.discovery())
        if self.path == "/jwks":
            issuer.jwks_fetches += 1
            held = issuer.held
            if held is not None:
                issuer.jwks_asked.set()
                held["gate"].wait(HOLD_LIMIT)
                if held["timed_out"]:
                    return self._json(504, {"error": "timeout"})
            if issuer.jwks_body is not None:
                return self._trickle(issuer.jwks_body, issuer.trickle_pause)
            return self._json(200, {"keys": [k.jwk() for k in issuer.published]})
        self._json(404, {"error": "not_found"})

    def _trickle(self, body, pause):
        """``body`` as the answer, sent a byte at a time every ``pause`` s
        (at once when 0); a reader gone ends it."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not pause:
            self.wfile.write(body)
            return
        try:
            for i in range(len(body)):
                self.wfile.write(body[i:i + 1])
                self.wfile.flush()
                time.sleep(pause)
        except OSError:
            pass

    def do_POST(self):
        issuer = self.server.issuer
        if self.path != "/token":
            return self._json(404, {"error": "not_found"})
        length = int(self.headers.get("Content-Length") or 0)
        form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
        client_id, secret = form.get("client_id"), form.get("client_secret")
        basic = self.headers.get("Authorization", "")
        if basic.lower().startswith("basic "):
            client_id, _, secret = base64.b64decode(basic[6:]).decode().partition(":")
        if form.get("grant_type") != "client_credentials":
            return self._json(400, {"error": "unsupported_grant_type"})
        client = issuer.clients.get(client_id)
        if client is None or client["secret"] != secret:
            return self._json(401, {"error": "invalid_client"})
        issuer.grants += 1
        asked = form.get("scope", "").split()
        scope = [s for s in asked if s in client["scopes"]] if asked else client["scopes"]
        token = issuer.token(sub=client_id, scope=" ".join(scope),
                             name=client.get("name", client_id))
        self._json(200, {"access_token": token, "token_type": "Bearer",
                         "expires_in": 300, "scope": " ".join(scope)})


class Issuer:
    """The provider; ``url`` is its issuer identifier (``http://127.0.0.1:PORT``)."""

    def __init__(self, port=None, audience=AUDIENCE):
        self.port = port or free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.audience = audience
        self.key = SigningKey()
        self.published = [self.key]
        self.clients = {}
        self.jwks_fetches = self.discovery_fetches = self.grants = 0
        self.held = None  # while JWKS reads hang: their gate, how they end
        #: The JWKS answer's bytes instead of the keys, sent a byte every
        #: ``trickle_pause`` seconds (0: at once): a slow or oversized answer.
        self.jwks_body, self.trickle_pause = None, 0.0
        self.jwks_asked = threading.Event()
        self._server = None

    # -- serving ----------------------------------------------------------------

    def start(self):
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), _Handler)
        self._server.daemon_threads = True
        self._server.issuer = self
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self):
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def discovery(self):
        return {"issuer": self.url, "jwks_uri": self.url + "/jwks",
                "token_endpoint": self.url + "/token",
                "grant_types_supported": ["client_credentials"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic",
                                                          "client_secret_post"],
                "id_token_signing_alg_values_supported": ["RS256", "ES256"],
                "response_types_supported": ["token"],
                "subject_types_supported": ["public"]}

    def hold_jwks(self):
        """From now on JWKS reads hang, as with a slow or blackholed issuer,
        until ``release_jwks``."""
        self.jwks_asked.clear()
        self.held = {"gate": threading.Event(), "timed_out": False}

    def release_jwks(self, timed_out=False):
        """Let the held JWKS reads go: answered, or 504 when ``timed_out``."""
        held, self.held = self.held, None
        if held is not None:
            held["timed_out"] = timed_out
            held["gate"].set()

    # -- keys, clients, tokens ----------------------------------------------------

    def rotate(self, alg="RS256", keep_old=False):
        """Sign with a new key from now on; publish it (the old one too when
        ``keep_old``, as a real rotation overlaps)."""
        self.key = SigningKey(alg)
        self.published = ([self.key] + self.published) if keep_old else [self.key]
        return self.key

    def add_client(self, client_id, scopes=(), name=None):
        secret = secrets.token_urlsafe(16)
        self.clients[client_id] = {"secret": secret, "scopes": list(scopes),
                                   "name": name or client_id}
        return secret

    def token(self, sub="svc-a", scope="", key=None, headers=None, omit=(),
              lifetime=300, **claims):
        """A JWT signed with ``key`` (the current one), for the audience and
        from this issuer unless ``claims`` say otherwise; ``omit`` leaves
        claims out; ``lifetime`` may be negative (expired)."""
        now = int(time.time())
        payload = {"iss": self.url, "aud": self.audience, "sub": sub,
                   "iat": now, "nbf": now, "exp": now + lifetime,
                   "jti": str(uuid.uuid4())}
        if scope:
            payload["scope"] = scope
        payload.update(claims)
        for name in omit:
            payload.pop(name, None)
        key = key or self.key
        header = {"kid": key.kid}
        header.update(headers or {})
        header = {k: v for k, v in header.items() if v is not None}
        return jwt.encode(payload, key.private, algorithm=key.alg, headers=header)
