"""Verify Agent Card signatures with the official Python SDK 1.x verifier
(``a2a.utils.signing.create_signature_verifier``), as a client does.

Runs in the SDK 1.x venv (``clients.py_sdk()``; the ``signing`` extra):

    verify_card.py --cards cards.json --jwks jwks.json
        cards.json: {"label": card, ...}; each card read the SDK's way
        (``parse_agent_card``: the 0.3 members mapped or ignored)
    verify_card.py --url BASE --path P [--path P ...] --jwks-url URL [--v10]
        each card fetched with the SDK's ``A2ACardResolver`` (``--v10``:
        with ``A2A-Version: 1.0``), the key found by ``kid`` in the JWKS
        fetched from ``--jwks-url``.

Prints one JSON object: {label: {"ok": bool, "error": class name, "kid",
"jku", "alg"}}, the protected header as the verifier read it.
"""

import argparse
import asyncio
import base64
import json
import sys

import httpx
from a2a.client.card_resolver import A2ACardResolver, parse_agent_card
from a2a.utils.signing import SignatureVerificationError, create_signature_verifier
from jwt import PyJWK

ALGORITHMS = ["ES256", "RS256", "EdDSA"]


def _header(card):
    if not card.signatures:
        return {}
    protected = card.signatures[0].protected
    return json.loads(base64.urlsafe_b64decode(protected + "=" * (-len(protected) % 4)))


def check(card, jwks):
    keys = {key["kid"]: key for key in jwks["keys"]}
    seen = {}

    def key_provider(kid, jku):
        seen.update(kid=kid, jku=jku)
        return PyJWK(keys[kid])

    verifier = create_signature_verifier(key_provider, ALGORITHMS)
    result = dict(_header(card), ok=True)
    try:
        verifier(card)
    except SignatureVerificationError as exc:
        result.update(ok=False, error=type(exc).__name__)
    result.update(seen)
    return result


async def fetch(base, paths, jwks_url, v10):
    headers = {"A2A-Version": "1.0"} if v10 else {}
    async with httpx.AsyncClient() as client:
        jwks = (await client.get(jwks_url)).json()
        resolver = A2ACardResolver(client, base)
        results = {}
        for path in paths:
            card = await resolver.get_agent_card(path, http_kwargs={"headers": headers})
            results[path] = check(card, jwks)
        return results


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--cards")
    parser.add_argument("--jwks")
    parser.add_argument("--url")
    parser.add_argument("--path", action="append", default=[])
    parser.add_argument("--jwks-url")
    parser.add_argument("--v10", action="store_true")
    args = parser.parse_args(argv)
    if args.cards:
        with open(args.cards) as f:
            cards = json.load(f)
        with open(args.jwks) as f:
            jwks = json.load(f)
        results = {label: check(parse_agent_card(card), jwks)
                   for label, card in cards.items()}
    else:
        results = asyncio.run(fetch(args.url, args.path, args.jwks_url, args.v10))
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1:])
