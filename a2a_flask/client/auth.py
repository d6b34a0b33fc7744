"""Credentials the client sends: an API key, a bearer token, HTTP Basic, or
OAuth 2 / OIDC client-credentials tokens fetched and refreshed.

Each is an ``Auth``: ``for_card`` adapts it to what the agent's card
declares (the API key header's name, the token endpoint), ``headers`` gives
the headers of one request, ``refused`` is told of a 401 and says whether
sending again may help (a fetched token is then dropped and fetched anew).
Secrets are never part of a ``repr``.
"""

import base64
import threading
import time
import urllib.parse
from typing import Any, Dict, Iterator, Optional, Tuple

from .errors import TokenError, TransportError
from .transport import Http, Lost, NotSent

JSONObject = Dict[str, Any]


def _schemes(card: JSONObject) -> Iterator[Tuple[str, JSONObject]]:
    """(type, details) of each security scheme of a card, 0.3 or 1.0 form:
    ``apiKey``, ``http``, ``oauth2``, ``openIdConnect``."""
    for scheme in (card.get("securitySchemes") or {}).values():
        if not isinstance(scheme, dict):
            continue
        if "apiKeySecurityScheme" in scheme:
            inner = scheme["apiKeySecurityScheme"]
            yield "apiKey", {"in": inner.get("location"), "name": inner.get("name")}
        elif "oauth2SecurityScheme" in scheme:
            yield "oauth2", scheme["oauth2SecurityScheme"]
        elif "openIdConnectSecurityScheme" in scheme:
            yield "openIdConnect", scheme["openIdConnectSecurityScheme"]
        elif "httpAuthSecurityScheme" in scheme:
            yield "http", scheme["httpAuthSecurityScheme"]
        elif "type" in scheme:
            yield scheme["type"], scheme


class Auth:
    """No credentials (and the base class)."""

    def for_card(self, card: JSONObject, http: Http) -> "Auth":
        return self

    def headers(self, http: Http) -> Dict[str, str]:
        return {}

    def refused(self) -> bool:
        return False


class ApiKey(Auth):
    """An API key, in ``header``; None: the header the card's ``apiKey``
    scheme names, else ``Authorization: Bearer`` (how a2a_flask takes it)."""

    def __init__(self, key: str, header: Optional[str] = None) -> None:
        self._key = key
        self.header = header

    def __repr__(self) -> str:
        return "ApiKey(header=%r)" % self.header

    def for_card(self, card: JSONObject, http: Http) -> Auth:
        if self.header is not None:
            return self
        for kind, scheme in _schemes(card):
            if kind == "apiKey" and scheme.get("in") == "header" and scheme.get("name"):
                return ApiKey(self._key, scheme["name"])
        return Bearer(self._key)

    def headers(self, http: Http) -> Dict[str, str]:
        if self.header is None or self.header.lower() == "authorization":
            return {"Authorization": "Bearer " + self._key}
        return {self.header: self._key}


class Bearer(Auth):
    """A bearer token given by the caller."""

    def __init__(self, token: str) -> None:
        self._token = token

    def __repr__(self) -> str:
        return "Bearer(...)"

    def headers(self, http: Http) -> Dict[str, str]:
        return {"Authorization": "Bearer " + self._token}


class Basic(Auth):
    """HTTP Basic: a user name and a password."""

    def __init__(self, username: str, password: str) -> None:
        self.username = username
        self._value = "Basic " + base64.b64encode(
            ("%s:%s" % (username, password)).encode("utf-8")).decode("ascii")

    def __repr__(self) -> str:
        return "Basic(%r)" % self.username

    def headers(self, http: Http) -> Dict[str, str]:
        return {"Authorization": self._value}


class ClientCredentials(Auth):
    """OAuth 2 client credentials (RFC 6749 section 4.4): an access token is
    fetched from ``token_url`` (None: the ``clientCredentials`` flow of the
    card's ``oauth2`` scheme, or the ``token_endpoint`` of its
    ``openIdConnect`` discovery document), kept until shortly before it
    expires (``expires_in``, less ``margin`` seconds), and fetched again
    then or when the agent refuses it. The client authenticates to the
    token endpoint with HTTP Basic (``secret_in="body"``: form fields).
    One token is shared by the threads of a client; one fetch at a time."""

    def __init__(self, client_id: str, client_secret: str,
                 token_url: Optional[str] = None, scope: Optional[str] = None,
                 audience: Optional[str] = None, secret_in: str = "basic",
                 margin: float = 30.0) -> None:
        self.client_id = client_id
        self._secret = client_secret
        self.token_url = token_url
        self.scope, self.audience, self.secret_in = scope, audience, secret_in
        self.margin = margin
        self._lock = threading.Lock()
        self._token: Optional[str] = None
        self._expires = 0.0
        #: How many tokens were fetched (observability, tests).
        self.fetched = 0

    def __repr__(self) -> str:
        return "ClientCredentials(%r, token_url=%r)" % (self.client_id, self.token_url)

    def for_card(self, card: JSONObject, http: Http) -> Auth:
        if self.token_url is None:
            self.token_url = _token_url(card, http)
        return self

    def headers(self, http: Http) -> Dict[str, str]:
        with self._lock:
            if self._token is None or time.monotonic() >= self._expires:
                self._fetch(http)
            return {"Authorization": "Bearer " + str(self._token)}

    def refused(self) -> bool:
        with self._lock:
            had = self._token is not None
            self._token = None
            return had

    def _fetch(self, http: Http) -> None:
        if not self.token_url:
            raise TokenError("No token URL: give token_url, or call an agent "
                             "whose card declares one.")
        form = {"grant_type": "client_credentials"}
        if self.scope:
            form["scope"] = self.scope
        if self.audience:
            form["audience"] = self.audience
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        if self.secret_in == "body":
            form.update(client_id=self.client_id, client_secret=self._secret)
        else:
            headers.update(Basic(urllib.parse.quote(self.client_id, safe=""),
                                 urllib.parse.quote(self._secret, safe="")).headers(http))
        started = time.monotonic()
        try:
            answer = http.request("POST", self.token_url, headers=headers,
                                  body=urllib.parse.urlencode(form).encode())
        except (NotSent, Lost) as exc:
            raise TransportError("token endpoint: %s" % exc) from exc
        body = answer.json()
        if answer.status != 200 or not isinstance(body, dict) \
                or not isinstance(body.get("access_token"), str):
            what = body.get("error") if isinstance(body, dict) else None
            raise TokenError("The token endpoint refused the client credentials "
                             "(%s)." % (what or answer.status), answer.status)
        self._token = body["access_token"]
        lifetime = body.get("expires_in")
        lifetime = float(lifetime) if isinstance(lifetime, (int, float, str)) \
            and str(lifetime).replace(".", "", 1).isdigit() else 3600.0
        self._expires = started + max(lifetime - self.margin, 0.0)
        self.fetched += 1


def _token_url(card: JSONObject, http: Http) -> Optional[str]:
    for kind, scheme in _schemes(card):
        if kind == "oauth2":
            flow = (scheme.get("flows") or {}).get("clientCredentials") or {}
            if flow.get("tokenUrl"):
                return flow["tokenUrl"]
        if kind == "openIdConnect" and scheme.get("openIdConnectUrl"):
            try:
                found = http.request("GET", scheme["openIdConnectUrl"]).json()
            except (NotSent, Lost) as exc:
                raise TransportError("OIDC discovery: %s" % exc) from exc
            if isinstance(found, dict) and found.get("token_endpoint"):
                return found["token_endpoint"]
    return None


def auth_from(key: Optional[str] = None, token: Optional[str] = None,
              basic: Optional[Tuple[str, str]] = None,
              auth: Optional[Auth] = None) -> Auth:
    """One ``Auth`` from the client's shorthand arguments (at most one)."""
    given = [a for a in (key and ApiKey(key), token and Bearer(token),
                         basic and Basic(*basic), auth) if a]
    if len(given) > 1:
        raise ValueError("give one of key, token, basic, auth")
    return given[0] if given else Auth()
