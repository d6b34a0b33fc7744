"""``flask a2a cards``: what a client sees of the Agent Cards."""

import click
from flask import current_app
from flask.cli import AppGroup

from .. import urls
from ..app_state import current_app_state
from ..protocol.cards import (PROTOCOL_VERSION, PROTOCOL_VERSION_V10, agent_card,
                              v10_reading)

cards_cli = AppGroup("cards", help="Inspect the Agent Cards this service serves.")


def _served(state):
    """(agent name, where, form, card) of every public card served."""
    settings = state.settings
    for agent in state.reachable_agents():
        at_root = [False]
        if agent.name == settings.default_agent:
            at_root.append(True)
        for root in at_root:
            where = urls.CARD_PATHS[0] if root else urls.card_path(settings, agent.name)
            for form in (PROTOCOL_VERSION[:3], PROTOCOL_VERSION_V10):
                yield agent.name, where, form, agent_card(state, agent, root,
                                                          form=form)
            if agent.has_extended_card:
                yield (agent.name, where + " (extended)", PROTOCOL_VERSION_V10,
                       agent_card(state, agent, root, extended=True,
                                  form=PROTOCOL_VERSION_V10))


@cards_cli.command("sign-check")
def sign_check() -> None:
    """Verify every card's signature as a 1.0 client would: the card read
    the 1.0 way, its RFC 8785 canonical form, the key named by ``kid`` in
    the JWKS at ``jku``. Exit status 1 when one fails."""
    state = current_app_state()
    signer = state.card_signer
    if signer is None:
        raise click.ClickException("A2A_CARD_SIGNING_KEY is not set: the cards "
                                   "are not signed.")
    from ..protocol.signing import canonical_form, verify  # the jose extra
    import jwt

    click.echo("key: %s %s, JWKS %s (%d key%s)" % (
        signer.alg, signer.kid, signer.jku, len(signer.jwks["keys"]),
        "" if len(signer.jwks["keys"]) == 1 else "s"))
    failed = 0
    with current_app.test_request_context(base_url=state.settings.public_base_url):
        for name, where, form, card in _served(state):
            read = v10_reading(card)
            try:
                header = verify(read, signer.jwks)
                outcome = "verified (%s, kid %s)" % (header["alg"], header["kid"])
            except jwt.PyJWTError as exc:
                failed += 1
                outcome = "FAILED: %s" % exc
            click.echo("%s  %s  form %s  %d canonical bytes  %s" % (
                name, where, form, len(canonical_form(read)), outcome))
    if failed:
        raise click.ClickException("%d card(s) failed verification" % failed)
