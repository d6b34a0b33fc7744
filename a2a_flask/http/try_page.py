"""The try page (``A2A_TRY_PAGE``): ``GET PREFIX/agents/<name>/`` asked for
by a browser answers (``discovery.agent_base``) one self-contained page to
try the agent, its card, a message form, the answer and the caller's recent
tasks (docs/try-page.md).

The page is static: its HTML and script are package data, the same for
every agent, and everything it shows comes from the agent's own routes
beside it (the card, A2A 1.0 JSON-RPC), read by the script and put in the
page as text. So nothing an agent or a caller wrote is ever rendered as
HTML here, and the Content-Security-Policy can be strict: only this page's
own script and style (by hash), calls to this origin only, no frames, no
forms posted anywhere, Trusted Types required for any HTML sink.
"""

import base64
import hashlib
import os
import re
from functools import lru_cache
from typing import Dict, List, Tuple

from flask import Response, request

_INLINE = re.compile(r"<(script|style)>(.*?)</\1>", re.S)


def _read(name):
    with open(os.path.join(os.path.dirname(__file__), name), encoding="utf-8") as f:
        return f.read()


def inline_page(html_name: str, *script_names: str) -> Tuple[str, str]:
    """(HTML, Content-Security-Policy) of a self-contained page: the
    scripts ``script_names`` in one closure in place of ``/*SCRIPT*/``,
    and a policy admitting only its own inline script and style (by hash)."""
    html = _read(html_name)
    # One closure: a key typed in stays in it, and so do the view's helpers.
    script = '(function () {\n  "use strict";\n%s}());' % "\n".join(
        _read(name) for name in script_names)
    html = html.replace("/*SCRIPT*/", script, 1)
    hashes: Dict[str, List[str]] = {"script": [], "style": []}
    for kind, text in _INLINE.findall(html):
        digest = hashlib.sha256(text.encode("utf-8")).digest()
        hashes[kind].append("'sha256-%s'" % base64.b64encode(digest).decode("ascii"))
    policy = "; ".join([
        "default-src 'none'",
        "script-src " + " ".join(hashes["script"]),
        "style-src " + " ".join(hashes["style"]),
        "connect-src 'self'",
        "img-src data:",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
        "require-trusted-types-for 'script'",
        "trusted-types 'none'",
    ])
    return html, policy


@lru_cache(maxsize=1)
def page():
    """(the page's HTML, its Content-Security-Policy), built once."""
    return inline_page("try_page.html", "try_page_view.js", "try_page.js")


def wants_page():
    """Whether the request is a browser's asking for a page: text/html named
    (not only ``*/*``, as curl sends) and preferred to JSON."""
    accept = request.accept_mimetypes
    if not any(value == "text/html" and quality > 0 for value, quality in accept):
        return False
    return accept.best_match(["text/html", "application/json"]) == "text/html"


def page_response(built=None):
    """The answer of a page built by ``inline_page`` (the try page's by
    default): its policy, never cached, never sniffed, no referrer."""
    html, policy = built or page()
    response = Response(html, mimetype="text/html")
    response.headers["Content-Security-Policy"] = policy
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"
    response.headers["Vary"] = "Accept"
    return response

