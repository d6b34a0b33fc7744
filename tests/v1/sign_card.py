"""Sign an Agent Card with the official a2a-sdk 1.x signer
(``a2a.utils.signing.create_agent_card_signer``), for the client's tests.

    PY sign_card.py KID < card.json > signatures.json

Reads a card (JSON; members outside the 1.0 schema, such as the 0.3 ones,
are ignored as the SDK ignores them) and a private EC P-256 key in PEM
from the environment variable ``SIGNING_KEY``; prints the ``signatures``
list the SDK made (ES256, ``typ`` JOSE, the given ``kid``).
"""

import json
import os
import sys

from google.protobuf.json_format import MessageToDict, ParseDict

from a2a.types import AgentCard
from a2a.utils.signing import create_agent_card_signer

card = ParseDict(json.load(sys.stdin), AgentCard(), ignore_unknown_fields=True)
signer = create_agent_card_signer(os.environ["SIGNING_KEY"],
                                  {"alg": "ES256", "typ": "JOSE", "kid": sys.argv[1]})
json.dump(MessageToDict(signer(card))["signatures"], sys.stdout)
