"""Agent Cards over HTTP: which form a request asks for, and the caching
headers of a card's GET answer (specification 1.0, section 8.6)."""

import hashlib
import json
from typing import TYPE_CHECKING, Any, Dict, Optional

from flask import request

from .cards import PROTOCOL_VERSION, PROTOCOL_VERSION_V10
from .json_body import json_response
from .call import HEADER, asked_version

if TYPE_CHECKING:  # pragma: no cover
    from flask import Request
    from werkzeug.wrappers import Response

    from ..app_state import AppState


def asked_form(req: "Request") -> str:
    """The card form a request asks for: "1.0" with ``A2A-Version: 1.0``
    (header or query parameter), else "0.3" (the compatible card)."""
    if asked_version(req) == PROTOCOL_VERSION_V10:
        return PROTOCOL_VERSION_V10
    return PROTOCOL_VERSION[:3]


def etag(app_state: "AppState", card: Dict[str, Any]) -> str:
    """The card's entity tag: a digest of the card without its signatures,
    plus the signing key's id. Every worker and every restart gives the same
    tag for the same card (an ES256 signature differs at each signing, so
    the tag is weak: equal meaning, maybe other bytes)."""
    unsigned = {key: value for key, value in card.items() if key != "signatures"}
    text = json.dumps(unsigned, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)
    signer = app_state.card_signer
    text += "\n" + (signer.kid if signer is not None else "")
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def card_response(app_state: "AppState", card: Dict[str, Any], public: bool,
                  response: Optional["Response"] = None) -> "Response":
    """The GET answer of ``card`` with its caching headers: ``ETag``,
    ``Cache-Control`` (``public, max-age=A2A_CARD_MAX_AGE`` for a public
    card, ``private, no-cache`` for one shown to its caller only) and
    ``Vary: A2A-Version``; 304 when ``If-None-Match`` names its tag."""
    response = response if response is not None else json_response(card)
    response.set_etag(etag(app_state, card), weak=True)
    if public:
        response.cache_control.public = True
        response.cache_control.max_age = app_state.settings.card_max_age
    else:
        response.cache_control.private = True
        response.cache_control.no_cache = True
    response.vary.add(HEADER)
    return response.make_conditional(request)
